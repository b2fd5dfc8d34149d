"""Tests of pair_switch.py: which runs a pairing on pinned sampling makes, and how it
counts them. Run: python3 -m unittest discover -s scripts/realmodel -p 'test_*.py'."""

import contextlib
import io
import json
import tempfile
import unittest
from pathlib import Path

import bench
import pair_switch
from test_bench import row, rows_file

RULE = "repair.partial-file-write"
OFF = pair_switch.off_system(RULE)


class Pairing(unittest.TestCase):
    def test_a_task_the_rule_never_fired_in_counts_as_one_run_for_both_arms(self):
        rows = [row("01-a", "conclave", solved=True, claimed=True, rulesFired=[RULE]),
                row("01-a", OFF, solved=False),
                row("02-b", "conclave", solved=True, rulesFired=["repair.json"]),
                row("02-b", OFF, solved=True),
                row("03-c", "conclave", rulesFired=[])]
        text = pair_switch.summary(rows, pair_switch.Arms(RULE))
        self.assertIn("paired over 3 tasks on pinned sampling (fired in 1): +33%", text)
        self.assertIn("- 01-a: fired; on solved, claimed, off not solved", text)
        self.assertIn("- 02-b: never fired; on solved, reported failed, off solved, reported failed "
                      "(the same run)", text)
        self.assertIn("repeatable: where it never fired, the off arm repeated the run call for call", text)

    def test_reflection_acts_where_the_run_reflected(self):
        arms = pair_switch.Arms(reflect=True)
        rows = [row("HE-1", "conclave+reflect", solved=True, reflections=2), row("HE-1", "conclave"),
                row("HE-2", "conclave+reflect", reflections=0), row("HE-2", "conclave")]
        text = pair_switch.summary(rows, arms)
        self.assertIn("`team.reflect` on minus off, paired over 2 tasks on pinned sampling (fired in 1): +50%",
                      text)
        self.assertIn("- HE-1: fired; on solved, reported failed, off not solved", text)

    def test_once_a_repeat_differs_only_tasks_both_arms_ran_are_paired(self):
        rows = [row("01-a", "conclave", solved=True, rulesFired=[RULE]), row("01-a", OFF),
                row("02-b", "conclave", calls=10), row("02-b", OFF, calls=11, solved=True),
                row("03-c", "conclave", solved=True)]
        text = pair_switch.summary(rows, pair_switch.Arms(RULE))
        self.assertIn("paired over 2 tasks on pinned sampling (fired in 1): +0%", text)
        self.assertIn("(a different run)", text)
        self.assertIn("not repeatable", text)
        self.assertIn("(1 ran with it on alone)", text)

    def test_a_fired_task_without_its_off_run_is_left_out_and_named(self):
        rows = [row("01-a", "conclave", rulesFired=[RULE])]
        text = pair_switch.summary(rows, pair_switch.Arms(RULE))
        self.assertIn("paired over 0 tasks", text)
        self.assertIn("- 01-a: fired, the off arm not run yet", text)


class Runs(unittest.TestCase):
    """The off arm runs where the rule fired, and once where it did not, to check that
    the server repeats itself; a pass cut short runs on without repeating a run."""

    def setUp(self):
        self.ran = []
        self.fires = {"01-pager-off-by-one", "03-cart-remove"}
        self.real_run = pair_switch.run

        def fake(args, task, system):
            self.ran.append((task, system))
            fired = [RULE] if task in self.fires and system == "conclave" else []
            with open(args.out, "a") as out:
                pinned = {"seed": args.seed, "temperature": args.temperature, "timeout": args.timeout,
                          "commit": args.commit}
                out.write(json.dumps(row(task, system, rulesFired=fired, **pinned)) + "\n")
            return pair_switch.rows_of(args.out)[-1]

        pair_switch.run = fake

    def tearDown(self):
        pair_switch.run = self.real_run

    def test_once_a_repeat_differs_the_off_arm_runs_on_every_task(self):
        real = bench.same_run
        bench.same_run = lambda a, b: False
        self.addCleanup(setattr, bench, "same_run", real)
        with tempfile.TemporaryDirectory() as d:
            out = str(Path(d) / "rows.jsonl")
            pair_switch.main(["--rule", RULE, "--set", "heldout", "--tasks", "01,02,03,04", "--out", out])
        self.assertEqual([system for _, system in self.ran], ["conclave", OFF] * 4)

    def test_error_strategies_are_paired_on_every_task(self):
        with tempfile.TemporaryDirectory() as d:
            out = str(Path(d) / "rows.jsonl")
            pair_switch.main(["--strategies", "--set", "heldout", "--tasks", "01,02", "--out", out])
            self.assertEqual([system for _, system in self.ran],
                             ["conclave", bench.STRATEGIES_OFF] * 2)
            text = pair_switch.summary(pair_switch.rows_of(out), pair_switch.Arms(strategies=True))
        self.assertIn("`team.errorStrategies` on minus off, paired over 2 tasks on pinned sampling "
                      "(fired in 2): +0%", text)

    def test_the_off_arm_runs_where_the_rule_fired_and_once_besides(self):
        with tempfile.TemporaryDirectory() as d:
            out = str(Path(d) / "rows.jsonl")
            argv = ["--rule", RULE, "--set", "heldout", "--tasks", "01,02,03,04", "--out", out]
            pair_switch.main(argv)
            self.assertEqual(self.ran, [
                ("01-pager-off-by-one", "conclave"), ("01-pager-off-by-one", OFF),
                ("02-grade-boundaries", "conclave"), ("02-grade-boundaries", OFF),
                ("03-cart-remove", "conclave"), ("03-cart-remove", OFF),
                ("04-cli-min-length", "conclave")])
            self.ran.clear()
            pair_switch.main(argv)
            self.assertEqual(self.ran, [])

    def earlier_reflect_pass(self, directory, **pins):
        """A `--reflect` pairing that repeated itself: 01 reflected (its plain run is the
        off arm), 02 and 04 never did (02 repeated by the plain team), 03 was not run."""
        fields = {"seed": 27, "temperature": 0.8, "timeout": 600, "commit": "abc1234", **pins}
        reflecting, plain = "conclave+reflect", "conclave"
        return rows_file(directory, "reflect.jsonl", [
            row("01-pager-off-by-one", reflecting, reflections=2, rulesFired=[RULE], **fields),
            row("01-pager-off-by-one", plain, rulesFired=[RULE], **fields),
            row("02-grade-boundaries", reflecting, reflections=0, **fields),
            row("02-grade-boundaries", plain, reflections=0, **fields),
            row("04-cli-min-length", reflecting, reflections=0, solved=True, rulesFired=[RULE], **fields)])

    def test_the_default_team_s_runs_of_an_earlier_pass_are_the_on_arm(self):
        with tempfile.TemporaryDirectory() as d:
            earlier = self.earlier_reflect_pass(d)
            out = str(Path(d) / "rows.jsonl")
            argv = ["--rule", RULE, "--set", "heldout", "--tasks", "01,02,03,04", "--seed", "27",
                    "--temperature", "0.8", "--commit", "abc1234", "--out", out, "--on-from", earlier]
            pair_switch.main(argv)
            # 01: the plain team's run, where it fired; 02: the plain run where it did not,
            # repeated once; 03: the earlier pass lacks it; 04: a run that never reflected.
            self.assertEqual(self.ran, [
                ("01-pager-off-by-one", OFF), ("02-grade-boundaries", OFF),
                ("03-cart-remove", "conclave"), ("03-cart-remove", OFF), ("04-cli-min-length", OFF)])
            # The earlier runs are read, not copied: the pairing's file has its own runs only.
            self.assertEqual(len(pair_switch.rows_of(out)), 5)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                pair_switch.main(["--rule", RULE, "--summary", out, "--on-from", earlier])
            summary = printed.getvalue()
            self.assertIn("paired over 4 tasks on pinned sampling (fired in 3): +25%", summary)
            self.assertIn("- 04-cli-min-length: fired; on solved, reported failed, off not solved", summary)

    def test_the_runs_of_another_build_or_sampling_are_not_taken(self):
        with tempfile.TemporaryDirectory() as d:
            earlier = self.earlier_reflect_pass(d, seed=26)
            argv = ["--rule", RULE, "--set", "heldout", "--tasks", "01", "--seed", "27",
                    "--temperature", "0.8", "--commit", "abc1234", "--out", str(Path(d) / "rows.jsonl"),
                    "--on-from", earlier]
            with self.assertRaises(SystemExit) as refused:
                pair_switch.main(argv)
            self.assertIn("seed 26, not 27", str(refused.exception))
            self.assertEqual(self.ran, [])

    def test_reflecting_runs_stand_for_the_default_team_only_where_their_pass_repeated(self):
        with tempfile.TemporaryDirectory() as d:
            earlier = self.earlier_reflect_pass(d)
            rows = pair_switch.rows_of(earlier)
            rows[3]["calls"] = 11
            Path(earlier).write_text("".join(json.dumps(r) + "\n" for r in rows))
            wanted = pair_switch.pins(rows[0])
            found = pair_switch.earlier_default_team_runs(earlier, pair_switch.Arms(RULE), wanted)
            self.assertEqual(sorted(found), ["01-pager-off-by-one", "02-grade-boundaries"])
            self.assertEqual(found["02-grade-boundaries"]["calls"], 11)


if __name__ == "__main__":
    unittest.main()
