#!/usr/bin/env python3
"""A rule or repair paired against itself switched off (or `team.reflect` against the
plain team), task by task, on pinned sampling.

With the temperature and seed pinned (`bench.py --temperature`), a run with a rule
switched off is the run with it on, call for call, until the rule first acts: the
model is asked the same prompts and sampled with the same seeds. So the arm with the
rule off only needs running on the tasks where the rule fired; on the others the two
arms are one run. That halves a pairing's cost and takes sampling noise out of it: a
difference between the arms is the rule's doing.

Whether a run repeats is checked, not assumed: the off arm is also run on the first task
where the rule did not fire, and the two rows must agree in calls and tokens. Runs repeat
when the model server keeps no prompts in host memory (`LLAMA_ARG_CACHE_RAM=0`; the bench
refuses otherwise) and each run works in the bench's one pinned folder (README.md,
Sampling). Once a repeat came out different, the off arm runs on every task and only
tasks both arms ran are paired.

    scripts/realmodel/pair_switch.py --rule repair.partial-file-write --set heldout \\
        --tasks 01,02 --seed 27 --temperature 0.8 --commit C --conclave /tmp/conclave-C \\
        --out scripts/realmodel/results/heldout-C-pinned-partial-write.jsonl

    scripts/realmodel/pair_switch.py --rule repair.partial-file-write --summary FILE
    scripts/realmodel/pair_switch.py --reflect --set heldout --tasks HE-0 ... --out FILE
    scripts/realmodel/pair_switch.py --strategies --set heldout ... --out FILE

`--strategies` pairs the default team with `team.errorStrategies` off. The next steps act
after any failure, which nearly every run has and no row counts, so its off arm runs on
every task; pinning still keeps the two runs of a task the same until the first failure.

A rule's on arm is the default team, which an earlier pinned pass of the same build,
seed, temperature and limit may already have run: `--on-from FILE` takes its runs of
the default team (and, from a `--reflect` pairing that repeated itself, its reflecting
runs that never reflected, the same runs call for call) as the on arm, so only the off
arm is run where the rule fired in them. Those rows stay in FILE alone, so no run is
counted twice in the held-out tables.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import bench
from bench import PINNED, Arms, off_system, pins, same_run, with_on_arm

HERE = Path(__file__).resolve().parent


def rows_of(path):
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def earlier_default_team_runs(path, arms, wanted):
    """The runs in `path`, an earlier pinned pass, that stand for this rule pairing's on
    arm (the default team), as rows of that system. A reflecting run stands for the
    default team only where it never reflected, and only if that pairing's repeats (the
    plain team run where reflection never acted) came out the same run.
    Rows of another build or other sampling than `wanted` are refused: their runs are
    not this pairing's."""
    if arms.on != "conclave":
        raise SystemExit("--on-from seeds a rule pairing, whose on arm is the default team")
    rows = rows_of(path)
    if not rows:
        raise SystemExit(f"{path}: no rows")
    for r in rows:
        differs = [f"{k} {r.get(k)!r}, not {wanted[k]!r}" for k in PINNED if r.get(k) != wanted[k]]
        if differs:
            raise SystemExit(f"{path}: {r['task']} ran with {'; '.join(differs)}: "
                             "its runs are not this pairing's on arm")
    return bench.default_team_runs(rows)


def summary(rows, arms):
    """The paired difference (on minus off), and the tasks the switch acted in with each
    arm's outcome. When runs repeat, a task it never acted in counts as no difference;
    when a repeat came out different, the runs are not the same until the switch acts,
    so only the tasks both arms ran are paired."""
    on_rows, off_rows, found, repeats, alone = bench.pinned_pairing(rows, arms)
    lines = []
    for task, on, off, fired in found:
        if fired and off is None:
            lines.append(f"- {task}: fired, the off arm not run yet")
        elif fired:
            lines.append(f"- {task}: fired; on {outcome(on)}, off {outcome(off)}")
        elif off is not None:
            lines.append(f"- {task}: never fired; on {outcome(on)}, off {outcome(off)}"
                         f"{' (the same run)' if same_run(on, off) else ' (a different run)'}")
    n, diff, low, high = bench.paired(on_rows, off_rows)
    head = (f"`{arms.name}` on minus off, paired over {n} tasks on pinned sampling "
            f"(fired in {sum(f for *_, f in found)}): {diff:+.0%} ({low:+.0%} to {high:+.0%})")
    if repeats is None:
        note = "repeatable: not checked yet"
    elif repeats:
        note = "repeatable: where it never fired, the off arm repeated the run call for call"
    else:
        note = (f"not repeatable: a run with it off, where it never fired, came out different; "
                f"only tasks both arms ran are paired ({alone} ran with it on alone)")
    return "\n".join([head, *lines, note])


def outcome(row):
    if row["solved"]:
        return "solved" + (", claimed" if row["claimed"] else ", to review" if row.get("toReview") else ", reported failed")
    return "not solved" + (", claimed (false)" if row["claimed"] else "")


def run(args, task, system):
    command = [sys.executable, "-u", str(HERE / "bench.py"), "--set", args.set, "--tasks", task,
               "--systems", system, "--seed", str(args.seed), "--temperature", str(args.temperature),
               "--timeout", str(args.timeout), "--template", args.template, "--keep",
               "--conclave", args.conclave, "--out", args.out]
    if args.commit:
        command += ["--commit", args.commit]
    subprocess.run(command, check=True)
    return rows_of(args.out)[-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--rule", help="the rule or repair id to pair with it switched off")
    which.add_argument("--reflect", action="store_true",
                       help="pair team.reflect with the plain team (it acts after a failed attempt)")
    which.add_argument("--strategies", action="store_true",
                       help="pair the team with team.errorStrategies off (it acts after any failure, "
                            "so the off arm runs on every task)")
    parser.add_argument("--summary", nargs="*", metavar="FILE", help="summarise rows already run")
    parser.add_argument("--set", default="dev")
    parser.add_argument("--tasks", default="", help="comma-separated task prefixes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.8,
                        help="pinned for every call (default 0.8, llama-server's own)")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--template", default="fenced")
    parser.add_argument("--commit")
    parser.add_argument("--conclave", default=str(HERE.parent.parent / "target/release/conclave"))
    parser.add_argument("--out")
    parser.add_argument("--on-from", metavar="FILE",
                        help="an earlier pinned pass whose default-team runs are the on arm")
    args = parser.parse_args(argv)
    arms = Arms(args.rule, args.reflect, args.strategies)
    if args.summary is not None:
        rows = [r for f in args.summary for r in rows_of(f)]
        seeded = earlier_default_team_runs(args.on_from, arms, pins(rows[0])) if args.on_from and rows else {}
        print(summary(with_on_arm(rows, seeded), arms))
        return 0
    wanted = {"commit": args.commit, "seed": args.seed, "temperature": args.temperature,
              "timeout": args.timeout, "template": args.template, "faultRate": 0.0}
    seeded = earlier_default_team_runs(args.on_from, arms, wanted) if args.on_from else {}
    if not args.out:
        parser.error("--out is needed to run")
    # A pass cut short runs on from where it stopped: the rows in --out are kept.
    for task_dir in bench.selected_tasks(args.set, args.tasks):
        task = task_dir.name
        rows = with_on_arm(rows_of(args.out), seeded)
        on = next((r for r in rows if (r["task"], r["system"]) == (task, arms.on)), None)
        if on is None:
            on = run(args, task, arms.on)
        # The off arm where the switch acted; and where it did not, until a run there
        # has been repeated, and on every task once a repeat came out different.
        repeats = bench.repeatable(bench.pairs(rows, arms))
        if (arms.acted(on) or repeats is not True) and (task, arms.off) not in {
                (r["task"], r["system"]) for r in rows}:
            run(args, task, arms.off)
    print(summary(with_on_arm(rows_of(args.out), seeded), arms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
