#!/usr/bin/env python3
"""Replays the acceptance runner of two commits on the final acceptance test of each packed
dev run, and counts where their verdicts differ, by whether the run's code was right.

A change to the runner's rules is judged first on what it would have said of tests the
team really wrote: each run's workspace as it ended, its last acceptance test, the task
as the checks read it (`conclave intent`), and the files as they were (as the run kept
them, else as the task began). The hidden check says whether the
code was right. It reads packed dev runs (results/transcripts/dev-* and devhe-*); packed
held-out ones are refused. The fix loop is not replayed: a verdict that would have changed
the team's next step is counted as the final one.

`--held-out DIR` judges a rule already committed on held-out runs kept whole in DIR (the
run folders `bench.py --keep` leaves, moved aside unread). It prints what it prints for dev
runs, verdicts and rule ids, and never a test's text or the code: held-out runs are for
judging rules, not for finding them.

    scripts/realmodel/replay_runner.py --before e69563a [--after C] [--conclave BIN] [TARBALLS...]
    scripts/realmodel/replay_runner.py --before e69563a --held-out /work/heldout-kept
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VERDICTS = {0: "passed", 1: "failed", 3: "broken"}


def runner_at(commit, into):
    """The runner and its Python definitions reader as of `commit` (None: the work tree),
    written into `into`; the path of the runner."""
    for path in ("src/team/acceptance_runner.py", "src/checks/python/definitions.py"):
        text = (ROOT / path).read_text() if commit is None else subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True,
            check=True).stdout
        (into / Path(path).name).write_text(text)
    return into / "acceptance_runner.py"


def task_dir(run_name, held_out=False):
    """The task a run's folder names, among the dev tasks or the held-out ones."""
    root = HERE / ("heldout" if held_out else "tasks")
    found = re.search(r"-(HE-\d{3})-", run_name)
    if found:
        return next((root / "humaneval").glob(f"{found.group(1)}-*"), None)
    found = re.search(r"-(\d{2}-[a-z-]+?)-[a-z0-9_]{8}$", run_name)
    edits = root / "edit" if held_out else root
    return edits / found.group(1) if found else None


def intent_of(conclave, task_file, before):
    """The task as the checks read it (`conclave intent`), from the files as they were."""
    ran = subprocess.run([str(conclave), "intent", "--workspace", str(before), Path(task_file).read_text()],
                         capture_output=True, text=True, check=True)
    return json.dumps(json.loads(ran.stdout))


def verdict(runner, ws, test, task_file, originals, intent):
    # The test and the code are the model's: they get no more of this machine's
    # environment than a command of the team would (no keys, no home).
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ws), "LANG": "C.UTF-8",
           "PYTHONPATH": str(runner.parent)}
    try:
        ran = subprocess.run([sys.executable, str(runner), str(test), str(task_file), str(originals), "first",
                              "[]", intent, ""], cwd=ws, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        return "timed out", []
    rules = sorted(set(re.findall(r"^::rule (\S+)", ran.stdout, re.M)))
    return VERDICTS.get(ran.returncode, f"exit {ran.returncode}"), rules


def final_tests(source, pattern="**/bench-*"):
    """(the run's folder, its workspace as it ended, its last acceptance test) for each run
    matching `pattern` that wrote a test: the runs packed in a tarball, unpacked for as long
    as they are read, or the run folders kept in a directory."""
    with tempfile.TemporaryDirectory() as tmp:
        if Path(source).is_dir():
            runs = Path(source).glob(pattern)
        else:
            with tarfile.open(source) as packed:
                packed.extractall(tmp, filter="data")
            runs = Path(tmp).glob(pattern)
        for run_dir in sorted(runs):
            ws = run_dir / "ws"
            tests = sorted(ws.glob(".conclave/checks/*/acceptance_test.py"))
            if tests:
                yield run_dir, ws, tests[-1]


def replay(source, before, after, conclave, held_out=False):
    with tempfile.TemporaryDirectory() as tmp:
        for run_dir, ws, test in final_tests(source):
            task = task_dir(run_dir.name, held_out)
            if task is None or not (task / "check.py").exists():
                continue
            task_file = test.parent / "task.txt"
            if not task_file.exists():
                task_file = task / "task.txt"
            # The files as they were: as the run kept them, else as the task began (a task
            # that starts from nothing has no files/).
            began = task / "files" if (task / "files").is_dir() else Path(tmp) / "nothing"
            began.mkdir(exist_ok=True)
            originals = test.parent / "originals"
            if not originals.is_dir():
                originals = began
            intent = intent_of(conclave, task_file, began)
            right = subprocess.run([sys.executable, str(task / "check.py")], cwd=ws,
                                   capture_output=True).returncode == 0
            yield (run_dir.name, right, verdict(before, ws, test, task_file, originals, intent),
                   verdict(after, ws, test, task_file, originals, intent))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit whose runner is the baseline")
    parser.add_argument("--after", default=None, help="a commit (default: the work tree)")
    parser.add_argument("--conclave", default=str(ROOT / "target" / "debug" / "conclave"),
                        help="the binary that reads each task (`conclave intent`)")
    parser.add_argument("--held-out", metavar="DIR",
                        help="judge on the held-out run folders kept in DIR instead of packed dev runs")
    parser.add_argument("transcripts", nargs="*", default=sorted(
        glob.glob(str(HERE / "results" / "transcripts" / "dev*.tar.gz"))))
    args = parser.parse_args()
    if any(not os.path.basename(t).startswith("dev") for t in args.transcripts):
        sys.exit("replay_runner.py replays packed dev runs only (dev-*, devhe-*): held-out transcripts "
                 "are not mined (--held-out DIR judges a committed rule on kept held-out runs)")
    if args.held_out and not Path(args.held_out).is_dir():
        sys.exit(f"--held-out {args.held_out}: not a directory of kept run folders")
    sources = [args.held_out] if args.held_out else args.transcripts
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "before", Path(tmp) / "after"
        old.mkdir()
        new.mkdir()
        before, after = runner_at(args.before, old), runner_at(args.after, new)
        counts = {}
        for tarball in sources:
            for name, right, was, now in replay(tarball, before, after, args.conclave, bool(args.held_out)):
                key = ("right code" if right else "wrong code", was[0], now[0])
                counts[key] = counts.get(key, 0) + 1
                if was != now:
                    print(json.dumps({"transcripts": os.path.basename(tarball), "run": name, "right": right,
                                      "before": was, "after": now}))
    print()
    print("code | the test before | after | runs")
    for (code, was, now), n in sorted(counts.items()):
        print(f"{code} | {was} | {now} | {n}")


if __name__ == "__main__":
    main()
