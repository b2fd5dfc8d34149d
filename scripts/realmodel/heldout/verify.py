#!/usr/bin/env python3
"""Self-test of the held-out split: every held-out task's hidden check must fail on the
workspace the agent starts from (files/, or an empty folder when there is none) and pass
once the reference solution (solution/) is laid over it. The check runs exactly as
bench.py runs it (bench.hidden_check: check.py from the task's folder, cwd = workspace).
Runs no agent and no model.

    python3 scripts/realmodel/heldout/verify.py [--tasks PREFIX,...]

Prints a table; exits 1 if any task misbehaves.
"""

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REALMODEL = HERE.parent
sys.path.insert(0, str(REALMODEL))
sys.dont_write_bytecode = True
from bench import hidden_check  # noqa: E402


def workspace(task_dir, scratch, with_solution):
    """A fresh workspace, as bench.py lays it: a copy of files/ (only), and the
    reference solution over it when asked."""
    ws = Path(tempfile.mkdtemp(dir=scratch)) / "ws"
    if (task_dir / "files").is_dir():
        shutil.copytree(task_dir / "files", ws)
    else:
        ws.mkdir()
    if with_solution:
        shutil.copytree(task_dir / "solution", ws, dirs_exist_ok=True)
    return ws


def shape_problems(task_dir):
    problems = []
    text = (task_dir / "task.txt").read_text().strip() if (task_dir / "task.txt").is_file() else ""
    if not text:
        problems.append("no task.txt")
    if not (task_dir / "check.py").is_file():
        problems.append("no check.py")
    if not (task_dir / "solution").is_dir() or not any((task_dir / "solution").rglob("*")):
        problems.append("no solution/")
    files = task_dir / "files"
    if files.is_dir():
        # What must never reach an agent's workspace.
        leftovers = sorted({str(p.relative_to(files)) for p in files.rglob("__pycache__")} |
                           {n for n in ("check.py", "solution") if (files / n).exists()})
        if leftovers:
            problems.append(f"files/ holds {leftovers}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="", help="comma-separated task-name prefixes (default: all held out)")
    parser.add_argument("--set", default="heldout", choices=["heldout", "dev-humaneval"],
                        help="the held-out split (the default), or the dev HumanEval problems")
    args = parser.parse_args()
    split = json.loads((REALMODEL / "split.json").read_text())
    from bench import task_dirs
    tasks = task_dirs(args.set)
    if args.tasks:
        wanted = args.tasks.split(",")
        tasks = [t for t in tasks if any(t.name.startswith(w) for w in wanted)]
    dev = {str((REALMODEL / p).resolve()) for p in split["dev"]}
    bad = 0
    print(f"{'task':44} {'before (must fail)':18} {'with solution/ (must pass)':26} verdict")
    with tempfile.TemporaryDirectory(prefix="heldout-verify-") as scratch:
        for task_dir in tasks:
            name = str(task_dir.relative_to(REALMODEL))
            problems = shape_problems(task_dir) if task_dir.is_dir() else ["missing"]
            if args.set == "heldout" and str(task_dir.resolve()) in dev:
                problems.append("also listed as dev")
            before = after = None
            why = ""
            if not problems:
                before, why_before = hidden_check(task_dir, workspace(task_dir, scratch, False))
                after, why_after = hidden_check(task_dir, workspace(task_dir, scratch, True))
                if before:
                    problems.append("check passes on the starting workspace")
                if not after:
                    problems.append("check fails with the solution: " + why_after.strip().splitlines()[-1:][0]
                                    if why_after.strip() else "check fails with the solution")
            ok = not problems
            bad += not ok
            print(f"{name:44} {'passed' if before else 'failed' if before is not None else '-':18} "
                  f"{'passed' if after else 'failed' if after is not None else '-':26} "
                  f"{'ok' if ok else 'BAD: ' + '; '.join(problems)}", flush=True)
    print(f"\n{len(tasks) - bad} of {len(tasks)} {args.set} tasks behave (fail before, pass with the solution)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
