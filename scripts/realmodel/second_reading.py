#!/usr/bin/env python3
"""A trial of one way to tell a wrong acceptance test from wrong code: a second reading.

For every comparison the team's final code failed in its own acceptance test (`assert
call == expected`), the model is asked, from the task and the file as it was before the
task only, to work out step by step what the call returns. Where that reading gives the
code's value and not the test's, the test is likely wrong; where it gives the test's, the
code is. Whether this tells them apart is judged against the problem's own solution
(HumanEval's canonical one): each failing comparison is sorted by which side is right.

It reads the packed transcripts of dev HumanEval runs only (results/transcripts/devhe-*),
never held-out ones. Each reading is a row of --out; a rerun asks only for the missing
ones. Needs the model server (serve.sh) and Python 3.

    scripts/realmodel/second_reading.py --out results/trials/second-reading.jsonl
    scripts/realmodel/second_reading.py --summary results/trials/second-reading.jsonl
"""
import argparse
import ast
import glob
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from replay_runner import final_tests

HERE = Path(__file__).resolve().parent
PROBLEMS = HERE / "tasks" / "humaneval"

# Runs the test with each assert turned into a record of both sides, in a child Python
# (the project's module is imported from argv[1]; an unimported name is taken from it, as
# the acceptance runner's repair.test-missing-import does).
SIDES = r'''
import ast, json, signal, sys
sys.path.insert(0, sys.argv[1])
signal.alarm(10)
out = []
def __side(text, left, right):
    rec = {"assert": text}
    try:
        l, r = left(), right()
        rec.update(left=repr(l), right=repr(r), holds=bool(l == r))
    except BaseException as e:
        rec["error"] = type(e).__name__
    out.append(rec)
def thunk(node):
    return ast.Lambda(ast.arguments([], [], None, [], [], None, []), node)
class Sides(ast.NodeTransformer):
    def visit_Assert(self, node):
        t = node.test
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Eq, ast.Is)):
            left, right = t.left, t.comparators[0]
        else:
            left, right = t, ast.Constant(True)
        return ast.Expr(ast.Call(ast.Name("__side", ast.Load()),
                                 [ast.Constant(ast.unparse(t)), thunk(left), thunk(right)], []))
tree = ast.fix_missing_locations(Sides().visit(ast.parse(open(sys.argv[2]).read())))
try:
    import solution
    ns = {k: v for k, v in vars(solution).items() if not k.startswith("__")}
except BaseException:
    ns = {}
ns.update(__side=__side, __name__="__main__")
try:
    exec(compile(tree, "acceptance_test.py", "exec"), ns)
    for name, value in list(ns.items()):
        if name.startswith("test") and callable(value):
            try:
                value()
            except BaseException:
                pass
except BaseException:
    pass
print(json.dumps(out))
'''


def sides(code_dir, test):
    ran = subprocess.run([sys.executable, "-c", SIDES, str(code_dir), str(test)],
                         capture_output=True, text=True, timeout=60)
    try:
        return json.loads(ran.stdout)
    except ValueError:
        return []


def problem_dir(run_dir):
    number = re.search(r"-HE-(\d{3})-", run_dir.name).group(1)
    return next(PROBLEMS.glob(f"HE-{number}-*"))


def failing_comparisons(tarball):
    """(run, problem dir, assert, code's value, test's value, right value, solved) for
    each comparison the final code failed in the final acceptance test."""
    for run_dir, ws, test in final_tests(tarball, "bench-*-HE-*"):
        problem = problem_dir(run_dir)
        solved = subprocess.run([sys.executable, str(problem / "check.py")], cwd=ws,
                                capture_output=True).returncode == 0
        canonical = {c["assert"]: c for c in sides(problem / "solution", test)}
        for c in sides(ws, test):
            if c.get("holds") is not False:
                continue
            right = canonical.get(c["assert"], {}).get("left")
            yield {"transcripts": Path(tarball).name, "run": run_dir.name, "solved": solved,
                   "assert": c["assert"], "code": c["left"], "test": c["right"], "right": right,
                   "problem": problem.name}


def ask(upstream, prompt):
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 500,
            "temperature": 0.0, "seed": 1}
    request = urllib.request.Request(f"{upstream}/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=900) as answer:
        return json.load(answer)["choices"][0]["message"]["content"]


def reading_of(answer):
    """The value on the answer's last `RESULT:` line, as a Python literal's repr."""
    found = re.findall(r"RESULT:\s*`?([^`\n]+)`?", answer)
    if not found:
        return None
    try:
        return repr(ast.literal_eval(found[-1].strip()))
    except (ValueError, SyntaxError):
        return None


def read_again(upstream, row):
    problem = PROBLEMS / row["problem"]
    compared = ast.parse(row["assert"], mode="eval").body
    call = ast.unparse(compared.left) if isinstance(compared, ast.Compare) else row["assert"]
    prompt = (f"Task:\n{(problem / 'task.txt').read_text()}\n\nThe file as it is:\nsolution.py:\n"
              f"{(problem / 'files' / 'solution.py').read_text()}\n"
              f"Going only by what the task and the docstring say, what does `{call}` return? "
              "Work it out step by step, then give the value as a Python literal on a last line "
              "of its own: RESULT: <value>")
    return reading_of(ask(upstream, prompt))


def same(a, b):
    """One value, however quoted: a model often writes a string's text without quotes."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    try:
        return str(ast.literal_eval(a)) == str(ast.literal_eval(b))
    except (ValueError, SyntaxError):
        return False


def summary(rows):
    """Per comparison: which side the reading took, by which side was right. Per run
    (every failing comparison read): what two ways of weighing the readings would make of
    the run, by whether its code was right."""
    lines = []
    tally = {}
    for row in rows:
        kind = "the test wrong" if not same(row["test"], row["right"]) else "the code wrong"
        took = ("no value" if row["reading"] is None else "the code's" if same(row["reading"], row["code"])
                else "the test's" if same(row["reading"], row["test"]) else "another")
        tally.setdefault(kind, {}).setdefault(took, 0)
        tally[kind][took] += 1
    lines.append("Failing comparisons, by which side was right, and the value the second reading gave:")
    for kind, took in sorted(tally.items()):
        parts = ", ".join(f"{k} {n}" for k, n in sorted(took.items()))
        lines.append(f"- {kind} ({sum(took.values())}): {parts}")
    runs = {}
    for row in rows:
        runs.setdefault((row["transcripts"], row["run"]), []).append(row)
    decided = {"right code": [0, 0, 0], "wrong code": [0, 0, 0]}
    for found in runs.values():
        readings = [(same(r["reading"], r["code"]), same(r["reading"], r["test"])) for r in found]
        key = "right code" if found[0]["solved"] else "wrong code"
        decided[key][0] += 1
        # Set aside where the reading sides with the code, and never against it.
        decided[key][1] += any(c for c, _ in readings) and not any(t for _, t in readings)
        # A failure counts only where a reading confirms one of the test's values.
        decided[key][2] += not any(t for _, t in readings)
    lines.append("")
    lines.append("Runs that ended on these failures, and how many would go to review instead:")
    for key, (n, sides_with_code, unconfirmed) in decided.items():
        lines.append(f"- {key}: {n}; a reading sides with the code and none with the test: {sides_with_code}; "
                     f"no reading confirms the test: {unconfirmed}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(HERE / "results" / "trials" / "second-reading.jsonl"))
    parser.add_argument("--upstream", default="http://127.0.0.1:18080/v1")
    parser.add_argument("--summary", metavar="FILE")
    parser.add_argument("transcripts", nargs="*",
                        default=sorted(glob.glob(str(HERE / "results" / "transcripts" / "devhe-*.tar.gz"))))
    args = parser.parse_args()
    if args.summary:
        print(summary([json.loads(line) for line in open(args.summary)]))
        return
    if any(not os.path.basename(t).startswith("devhe-") for t in args.transcripts):
        sys.exit("second_reading.py reads dev HumanEval runs only (devhe-*): held-out transcripts are not mined")
    done = set()
    if os.path.exists(args.out):
        done = {(r["transcripts"], r["run"], r["assert"]) for r in map(json.loads, open(args.out))}
    with open(args.out, "a") as out:
        for tarball in args.transcripts:
            for row in failing_comparisons(tarball):
                if (row["transcripts"], row["run"], row["assert"]) in done:
                    continue
                row["reading"] = read_again(args.upstream, row)
                out.write(json.dumps(row) + "\n")
                out.flush()
    print(summary([json.loads(line) for line in open(args.out)]))


if __name__ == "__main__":
    main()
