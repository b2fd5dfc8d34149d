#!/usr/bin/env python3
"""Writes the real-model section of BENCHMARKS.md, and the held-out count of every rule in
docs/checks.md, from the committed rows.

The section's prose is `benchmarks_section.md` beside this script; its tables are made
here from `results/*.jsonl` with bench.py's own summaries, so every figure in the section
comes from a committed pass. The section runs from its heading ("## The team on a real
model") to the next part of the document kept by hand ("### ACP on the real model").
docs/checks.md's first table under "## Counts on the real model" lists every rule the
document describes, in its order, with its counts over the held-out rows.

    scripts/realmodel/render_benchmarks.py          # rewrite both
    scripts/realmodel/render_benchmarks.py --check  # exit 1 if either is not current
"""

import argparse
import json
import re
import sys
from pathlib import Path

import bench

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TEMPLATE = HERE / "benchmarks_section.md"
START = "## The team on a real model"
END = "### ACP on the real model"
CHECKS = ROOT / "docs/checks.md"
COUNTS = "## Counts on the real model"
RUNS_SENTENCE = re.compile(r"Every rule, over the \d+ held-out runs")


def rows_of(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def rows_files(results, pattern):
    """The rows files matching `pattern`, by name; a file with no rows yet is left out."""
    return [f for f in sorted(Path(results).glob(pattern)) if rows_of(f)]


def load(results, pattern):
    return [r for f in rows_files(results, pattern) for r in rows_of(f)]


def held_out_tables(held):
    zero = [r for r in held if r["faultRate"] == 0]
    return "\n\n".join([
        bench.summary(held),
        "Each build, oldest first (the commit a row names is the binary's; pi does not depend on\n"
        "Conclave's build, its commit is the harness's):",
        bench.by_build(held),
        "Each task, all builds pooled (runs solved of runs; Conclave's claims, false ones in\n"
        "bold), at 0% injected faults (at 30%, see below):",
        bench.by_task(zero),
    ])


def edit_passes(results):
    """One line per system of each held-out pass over all fourteen edit tasks, oldest
    first."""
    lines = ["  | rows | system | build | seed | faults | solved | to review (right) | claims (false) |",
             "  | --- | --- | --- | --- | --- | --- | --- | --- |"]
    files = sorted(rows_files(results, "heldout-*.jsonl"),
                   key=lambda f: min(r.get("at", "") for r in rows_of(f)))
    for f in files:
        rows = rows_of(f)
        for system in sorted({r["system"] for r in rows}, key=lambda s: (s != "conclave", s)):
            rs = [r for r in rows if r["system"] == system and bench.kind_of(r["task"]) == "edit"]
            if len({r["task"] for r in rs}) < 14:
                continue
            solved = sum(r["solved"] for r in rs)
            which = ", ".join(r["task"][:2] for r in rs if r["solved"])
            cell = f"{solved} of {len(rs)}" + (f" ({which})" if solved else "")
            if system.startswith("pi"):
                review = claims = "—"
            else:
                handed = [r for r in rs if r.get("toReview")]
                review = f"{len(handed)} ({sum(r['solved'] for r in handed)})"
                claimed = [r for r in rs if r["claimed"]]
                claims = f"{len(claimed)} ({sum(not r['solved'] for r in claimed)})"
            lines.append(f"  | `{f.name}` | {system} | `{rs[0]['commit']}` | {rs[0]['seed']} | "
                         f"{int(rs[0]['faultRate'] * 100)}% | {cell} | {review} | {claims} |")
    return "\n".join(lines)


def pinned_with_pi(held):
    """A line for each pinned pass pi ran beside: the team's runs there (those of its
    switches' arms that stand for it included) against pi's on the same pins, paired
    task by task, in all and by kind of task."""
    keys = {bench.pinned_key(r) for r in held if r["system"] == "pi" and r.get("temperature") is not None}
    lines = []
    for key in sorted(keys, key=str):
        group = [r for r in held if bench.pinned_key(r) == key]
        team, pi = bench.plain_team_runs(group), [r for r in group if r["system"] == "pi"]
        tasks = {r["task"] for r in team} & {r["task"] for r in pi}
        if not tasks:
            continue
        team = [r for r in team if r["task"] in tasks]
        pi = [r for r in pi if r["task"] in tasks]
        n, diff, low, high = bench.paired(team, pi)
        first = team[0]
        delivered = [r for r in team if r["solved"] and (r["claimed"] or r.get("toReview"))]
        claimed = [r for r in team if r["claimed"]]
        line = (f"  - `{first['commit']}`, seed {first['seed']}, temperature {first['temperature']}, "
                f"{first['timeout']} s, {int(first['faultRate'] * 100)}% faults: the team solved "
                f"{sum(r['solved'] for r in team)} of {n} ({len(delivered)} completed or handed to "
                f"review right; {sum(not r['solved'] for r in claimed)} false of {len(claimed)} claims), "
                f"pi {sum(r['solved'] for r in pi)} of {n}; the team minus pi {diff:+.0%} "
                f"({low:+.0%} to {high:+.0%})")
        for kind in sorted({bench.kind_of(t) for t in tasks}):
            k_n, k_diff, k_low, k_high = bench.paired([r for r in team if bench.kind_of(r["task"]) == kind],
                                                      [r for r in pi if bench.kind_of(r["task"]) == kind])
            line += f"; {k_n} {kind} {k_diff:+.0%} ({k_low:+.0%} to {k_high:+.0%})"
        lines.append(line + ".")
    return "\n".join(lines) if lines else "  - None yet."


# The first build whose rows came after a completion resting on the team's own test alone
# began to exit 3 ("review", `ca641d1`): claims before and since are counted apart.
EXIT_3_FIRST_BUILD = "53afe06"


def claims(held):
    """What the team's claims and hand-overs to review came to on held-out work, every
    arm of the team counted, before and since exit 3, as the figures the prose names."""
    team = sorted((r for r in held if r["system"].startswith("conclave")), key=lambda r: r["at"])
    builds = list(dict.fromkeys(r["commit"] for r in team))
    first = builds.index(EXIT_3_FIRST_BUILD) if EXIT_3_FIRST_BUILD in builds else len(builds)
    since = [r for r in team if builds.index(r["commit"]) >= first]
    before = [r for r in team if builds.index(r["commit"]) < first]
    claimed = lambda rows: [r for r in rows if r["claimed"]]
    lost = lambda rows: [r for r in rows if r["solved"] and not r["claimed"] and not r.get("toReview")]
    reviews = [r for r in since if r.get("toReview")]
    return {
        "CLAIMS_SINCE": len(claimed(since)),
        "FALSE_SINCE": sum(not r["solved"] for r in claimed(since)),
        "BUILDS_SINCE": len(builds) - first,
        "REVIEWS": len(reviews),
        "REVIEWS_RIGHT": sum(r["solved"] for r in reviews),
        "CLAIMS_BEFORE": len(claimed(before)),
        "FALSE_BEFORE": sum(not r["solved"] for r in claimed(before)),
        "LOST": len(lost(team)),
        "LOST_SINCE": len(lost(since)),
    }


def section(results=HERE / "results", template=TEMPLATE):
    held = load(results, "heldout-*.jsonl")
    faults = load(results, "heldout-*faults*.jsonl")
    tables = {
        "HELDOUT": held_out_tables(held),
        "EDIT": edit_passes(results),
        "PINNED_PI": pinned_with_pi(held),
        "FAULTS": "\n\n".join([bench.summary(faults), bench.by_task(faults)]),
        "RULES": bench.rules_summary(held + load(results, "dev-*.jsonl")
                                     + load(results, "devhe-*.jsonl")),
        "PASSES": bench.by_pass([str(f) for f in rows_files(results, "*.jsonl")]),
        **{name: str(n) for name, n in claims(held).items()},
    }
    text = Path(template).read_text()
    for name, table in tables.items():
        text = text.replace("{{%s}}" % name, table)
    left = sorted(set(re.findall(r"\{\{[A-Z_]+\}\}", text)))
    if left:
        raise ValueError(f"{template}: nothing fills {', '.join(left)}")
    return text


def spliced(document, new_section):
    """`document` with its real-model section replaced by `new_section`."""
    start = document.index(START)
    end = document.index(END, start)
    return document[:start] + new_section + document[end:]


def rule_ids(checks):
    """The ids of the rules and repairs docs/checks.md describes (the first column of its
    tables before the counts), in the document's order."""
    described = checks[:checks.index(COUNTS)]
    return list(dict.fromkeys(re.findall(r"^\| `([a-z]+\.[a-z-]+)` \|", described, re.M)))


def checks_counts(checks, held):
    """docs/checks.md with its held-out count table, and the number of runs its sentence
    names, made from `held`."""
    counted = bench.checked_runs(held)
    counts = bench.rule_counts(held)
    lines = ["| rule | runs it fired in | of those solved | false alarms |", "| --- | --- | --- | --- |"]
    for rule in rule_ids(checks):
        fired, solved, alarms = counts.get(rule, (0, None, None))
        lines.append(f"| `{rule}` | {fired} | {'—' if not fired else solved} | {'—' if not fired else alarms} |")
    start = checks.index(COUNTS)
    table = checks.index("| rule |", start)
    end = checks.index("\n\n", table)
    head = RUNS_SENTENCE.sub(f"Every rule, over the {len(counted)} held-out runs", checks[:table], count=1)
    return head + "\n".join(lines) + checks[end:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="say whether BENCHMARKS.md's section is current; change nothing")
    parser.add_argument("--document", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    path = Path(args.document)
    now = path.read_text()
    new = spliced(now, section())
    checks_now = CHECKS.read_text()
    checks_new = checks_counts(checks_now, load(HERE / "results", "heldout-*.jsonl"))
    if args.check:
        stale = [f"{p}: {what}" for p, what, a, b in [
            (path, "the real-model section", now, new),
            (CHECKS, "the held-out count of each rule", checks_now, checks_new)] if a != b]
        for line in stale:
            print(f"{line} is not current with the rows under {HERE / 'results'}; "
                  f"run {Path(__file__).relative_to(ROOT)}", file=sys.stderr)
        return 1 if stale else 0
    path.write_text(new)
    CHECKS.write_text(checks_new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
