"""Tests of bench.py's record keeping: a committed pass must say how to run it again, and
the table of passes must count what its rows say. Run: python3 -m unittest discover -s
scripts/realmodel -p 'test_*.py'."""

import http.server
import json
import shlex
import tempfile
import threading
import tomllib
import unittest
import urllib.error
import urllib.request
from pathlib import Path

import bench


def row(task, system, **fields):
    base = {"system": system, "faultRate": 0.0, "task": task, "set": "heldout", "solved": False,
            "claimed": False, "toReview": False, "commit": "abc1234", "template": "fenced",
            "seed": 3, "temperature": None, "at": "2026-11-28T10:00:00Z", "seconds": 100.0,
            "calls": 10, "promptTokens": 1000, "completionTokens": 100}
    base.update(fields)
    return base


def rows_file(directory, name, rows):
    path = Path(directory) / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def parsed(command):
    words = shlex.split(command.replace("\\\n", " "))
    assert words[0] == "scripts/realmodel/bench.py", words[0]
    return bench.arguments(words[1:])


class Arms(unittest.TestCase):
    def test_a_switch_with_a_list_value_is_a_line_of_its_section(self):
        system = 'conclave+verify.disabled=["repair.partial-file-write"]+reflect'
        base, switches = bench.system_switches(system)
        self.assertEqual(base, "conclave")
        config = tomllib.loads(bench.conclave_config(8080, 600, switches))
        self.assertEqual(config["verify"]["disabled"], ["repair.partial-file-write"])
        self.assertIs(config["team"]["reflect"], True)
        self.assertEqual(config["undo"]["onFailure"], "keep")


class Reflections(unittest.TestCase):
    def test_each_reflection_any_board_held_is_counted_once(self):
        import sqlite3
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / ".conclave").mkdir()
            conn = sqlite3.connect(Path(d) / ".conclave" / "conclave.db")
            conn.execute("CREATE TABLE whiteboard_versions (seq INTEGER PRIMARY KEY, board TEXT, "
                         "version INTEGER, content TEXT, author TEXT, at INTEGER)")
            for board, version, content in [
                    ("agent:b1", 1, "- read solution.py"),
                    ("agent:b1", 2, "- read solution.py\n- reflection: the loop stopped one short"),
                    ("agent:b1", 3, "- reflection: the loop stopped one short\n- reflection: test the empty list"),
                    ("agent:b2", 1, "- reflection: the loop stopped one short")]:
                conn.execute("INSERT INTO whiteboard_versions (board, version, content, author, at) "
                             "VALUES (?, ?, ?, 'x', 0)", (board, version, content))
            conn.commit()
            conn.close()
            self.assertEqual(bench.reflections(Path(d)), 3)
            self.assertEqual(bench.reflections(Path(d) / "none"), 0)


class PinnedWorkspace(unittest.TestCase):
    def test_every_pinned_run_works_in_the_same_folder_emptied_first(self):
        from unittest import mock
        with tempfile.TemporaryDirectory() as d, mock.patch.object(tempfile, "tempdir", d):
            first = bench.pinned_workspace()
            self.assertTrue(first.parent.is_dir())
            first.mkdir()
            (first / "left_by_the_last_run.py").write_text("x = 1\n")
            second = bench.pinned_workspace()
            self.assertEqual(first, second)
            self.assertTrue(str(second).startswith(d))
            self.assertFalse(second.exists())


class RerunCommand(unittest.TestCase):
    def test_a_pass_runs_again_with_its_tasks_systems_faults_and_sampling(self):
        tasks = ["03-cart-remove", "HE-045-triangle_area"]
        rows = [row(t, s, faultRate=0.3, seed=14, template="fenced-plain", temperature=0.2,
                    timeout=300, piPreread=False, commit="dab7086")
                for t in tasks for s in ("conclave", "pi")]
        with tempfile.TemporaryDirectory() as d:
            f = rows_file(d, "heldout-dab7086.jsonl", rows)
            args = parsed(bench.rerun_command(f))
        self.assertEqual(args.set, "heldout")
        self.assertEqual([t.name for t in bench.selected_tasks(args.set, args.tasks)], tasks)
        self.assertEqual(args.systems, "conclave,pi")
        self.assertEqual(args.faults, "0.3")
        self.assertEqual((args.seed, args.temperature, args.template), (14, 0.2, "fenced-plain"))
        self.assertEqual((args.timeout, args.no_pi_preread), (300, True))
        self.assertEqual((args.commit, args.conclave), ("dab7086", "/tmp/conclave-dab7086"))
        # Appending to the same file keeps a repeat beside the pass it repeats.
        self.assertEqual(args.out, f)

    def test_rows_from_before_the_timeout_was_recorded_ran_600_s_at_the_server_s_sampling(self):
        with tempfile.TemporaryDirectory() as d:
            f = rows_file(d, "devhe.jsonl", [row("HE-048-is_palindrome", "conclave", set="dev")])
            args = parsed(bench.rerun_command(f))
        self.assertEqual((args.timeout, args.temperature, args.faults), (600, None, "0"))
        self.assertEqual(args.set, "dev-humaneval")
        self.assertFalse(args.no_pi_preread)
        self.assertEqual([t.name for t in bench.selected_tasks(args.set, args.tasks)], ["HE-048-is_palindrome"])


class RefusedCalls(unittest.TestCase):
    """`--refuse-calls TEXT`: the proxy answers every chat call containing TEXT with a
    429, as a provider that never serves that kind of call, and forwards the others."""

    def setUp(self):
        self.received = received = []
        # As llama-server caches prompts: the slot holds the last one; with host memory
        # (`--cache-ram`) every earlier one can be restored. A prompt found whole is
        # evaluated as one token.
        self.host_memory = False
        test = self

        class Upstream(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                cached = received[-1:] if not test.host_memory else received
                prompt_n = 1 if any(r["messages"] == request["messages"] for r in cached) else 12
                received.append(request)
                data = json.dumps({"choices": [{"message": {"content": "ok"}}],
                                   "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                                   "timings": {"prompt_n": prompt_n}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        threading.Thread(target=self.upstream.serve_forever, daemon=True).start()
        self.proxy = bench.Proxy(f"http://127.0.0.1:{self.upstream.server_address[1]}", 0.0,
                                 refuse="short Python test script")

    def tearDown(self):
        for server in (self.proxy.server, self.upstream):
            server.shutdown()
            server.server_close()

    def chat(self, text):
        body = json.dumps({"messages": [{"role": "user", "content": text}]}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.proxy.port}/v1/chat/completions",
                                         data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers.get("Retry-After"), json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Retry-After"), json.loads(e.read())

    def test_only_the_calls_with_the_text_are_rate_limited(self):
        status, retry_after, answer = self.chat("Write a short Python test script: 3 to 6 asserts")
        self.assertEqual((status, retry_after), (429, "1"))
        self.assertEqual(answer["error"]["type"], "rate_limit_exceeded")
        status, _, answer = self.chat("Write greet.py with hello(name).")
        self.assertEqual((status, answer["choices"][0]["message"]["content"]), (200, "ok"))
        self.assertEqual((self.proxy.calls, self.proxy.faults, self.proxy.prompt_tokens), (2, 1, 3))

    def test_pinned_runs_start_from_the_same_prompt_cache_and_sample_alike(self):
        pinned = bench.Proxy(f"http://127.0.0.1:{self.upstream.server_address[1]}", 0.0,
                             sampling=(0.8, 27))
        self.addCleanup(pinned.server.server_close)
        self.addCleanup(pinned.server.shutdown)
        runs = []
        for _ in range(2):
            self.received.clear()
            pinned.reset()
            request = urllib.request.Request(
                f"http://127.0.0.1:{pinned.port}/v1/chat/completions",
                data=json.dumps({"messages": [{"role": "user", "content": "Write greet.py."}],
                                 "temperature": 0.2}).encode(),
                headers={"Content-Type": "application/json"})
            urllib.request.urlopen(request, timeout=10).read()
            runs.append(list(self.received))
        self.assertEqual(runs[0], runs[1])
        *probe, clear, call = runs[0]
        # Before each run, one-token calls no agent sends leave the cache the same.
        self.assertEqual((clear["max_tokens"], clear["messages"][0]["content"]), (1, "."))
        self.assertEqual([r["max_tokens"] for r in probe], [1, 1])
        # The run's call sampled at the pass's temperature and a seed from its number.
        self.assertEqual((call["temperature"], call["seed"]), (0.8, 27 * 100_003 + 1))

    def test_a_server_restoring_prompts_from_host_memory_is_refused_for_pinned_runs(self):
        self.host_memory = True
        # Refused when the proxy is made, before any run.
        with self.assertRaises(bench.ServerCachesPrompts) as refused:
            bench.Proxy(f"http://127.0.0.1:{self.upstream.server_address[1]}", 0.0,
                        sampling=(0.8, 27))
        self.assertIn("LLAMA_ARG_CACHE_RAM=0", str(refused.exception))
        # Unpinned runs do not need the same start, and are not probed.
        self.received.clear()
        self.proxy.reset()
        self.assertEqual(self.received, [])

    def test_a_pass_with_refused_calls_runs_again_with_them(self):
        with tempfile.TemporaryDirectory() as d:
            f = rows_file(d, "dev.jsonl", [row("11-new-module", "conclave", set="dev",
                                                refuseCalls="short Python test script")])
            args = parsed(bench.rerun_command(f))
        self.assertEqual(args.refuse_calls, "short Python test script")


class ByPass(unittest.TestCase):
    def test_each_system_of_each_pass_is_one_line_oldest_pass_first(self):
        later = [row("01-pager-off-by-one", "conclave", solved=True, toReview=True, at="2026-11-28T12:00:00Z"),
                 row("02-grade-boundaries", "conclave", claimed=True),
                 row("01-pager-off-by-one", "pi", solved=True, claimed=True),
                 row("02-grade-boundaries", "pi", claimed=True)]
        earlier = [row("HE-045-triangle_area", "conclave", solved=True, claimed=True,
                       at="2026-11-27T09:00:00Z", commit="0ld0ne0")]
        with tempfile.TemporaryDirectory() as d:
            table = bench.by_pass([rows_file(d, "later.jsonl", later), rows_file(d, "earlier.jsonl", earlier)])
        lines = table.splitlines()[2:]
        self.assertEqual(len(lines), 3)
        self.assertIn("`earlier.jsonl` | conclave | `0ld0ne0`", lines[0])
        self.assertIn("1 HumanEval (heldout) | 1 of 1 | 1 (0) | 0 (0) |", lines[0])
        # The team's claim the hidden check fails is counted false; its right hand-over to review kept.
        self.assertIn("`later.jsonl` | conclave | `abc1234` | 3 | 0% | fenced | 2 edit (heldout) | 1 of 2 | 1 (1) | 1 (1) |",
                      lines[1])
        # pi's exit code claims nothing: only the hidden check speaks for it.
        self.assertIn("`later.jsonl` | pi |", lines[2])
        self.assertTrue(lines[2].endswith("| 1 of 2 | — | — |"), lines[2])


class KindsApart(unittest.TestCase):
    """Function problems and edit tasks are counted apart: one pooled figure hides that the
    team solves one kind far more often than the other."""

    rows = [row("HE-045-triangle_area", "conclave", solved=True, claimed=True),
            row("HE-045-triangle_area", "pi"),
            row("01-pager-off-by-one", "conclave"),
            row("01-pager-off-by-one", "pi"),
            row("02-grade-boundaries", "conclave", solved=True, toReview=True),
            row("02-grade-boundaries", "pi")]

    def test_the_summary_has_a_line_for_each_kind(self):
        lines = bench.summary(self.rows).splitlines()
        self.assertTrue(any(l.startswith("| conclave (heldout, HumanEval) | 0% | 1 of 1 |") for l in lines), lines)
        self.assertTrue(any(l.startswith("| conclave (heldout, edit) | 0% | 1 of 2 |") for l in lines), lines)
        self.assertTrue(any(l.startswith("| pi (heldout, edit) | 0% | 0 of 2 |") for l in lines), lines)

    def test_failures_resting_only_on_the_team_s_test_are_counted_with_their_false_alarms(self):
        rows = self.rows + [
            row("HE-046-fib4", "conclave", solved=True, rulesFailingAtEnd=["tests.acceptance"]),
            row("HE-047-median", "conclave", rulesFailingAtEnd=["tests.acceptance"]),
            row("HE-048-is_palindrome", "conclave", rulesFailingAtEnd=["tests.acceptance", "python.stub"]),
            row("HE-049-modp", "conclave", toReview=True, rulesFailingAtEnd=["tests.acceptance"])]
        self.assertIn("Failures resting only on the team's own test (`tests.acceptance` the one rule "
                      "failing at the end): 2, of them right code (false alarms) 1.", bench.summary(rows))

    def test_the_team_is_paired_with_pi_on_each_kind(self):
        table = bench.by_task(self.rows)
        self.assertIn("conclave minus pi, paired over the 3 tasks both ran: +67%", table)
        self.assertIn("On the 1 HumanEval tasks both ran: +100%", table)
        self.assertIn("On the 2 edit tasks both ran: +50%", table)


class PinnedArms(unittest.TestCase):
    """A switch paired on pinned sampling runs its other arm only where the switch acted;
    the table of tasks pairs it the way pair_switch.py does, not over those tasks alone."""

    RULE = "repair.partial-file-write"
    PINS = {"seed": 27, "temperature": 0.8, "timeout": 600}

    def rows(self):
        off = f'conclave+verify.disabled=["{self.RULE}"]'
        return [
            row("HE-1", "conclave+reflect", reflections=2, solved=True, **self.PINS),
            row("HE-1", "conclave", rulesFired=[self.RULE], **self.PINS),
            row("HE-1", off, solved=True, **self.PINS),
            # Never reflected and never ran plain: one run of both reflect arms, and, as
            # the reflect pairing repeated, the default team's run for the rule.
            row("HE-2", "conclave+reflect", reflections=0, solved=True, **self.PINS),
            row("HE-3", "conclave+reflect", reflections=0, **self.PINS),
            row("HE-3", "conclave", **self.PINS),
            # Unpinned runs of another build pair only where both arms ran.
            row("HE-4", "conclave+reflect", commit="def5678", reflections=0, solved=True),
        ]

    def test_a_run_the_switch_never_acted_in_stands_for_both_arms(self):
        table = bench.by_task(self.rows())
        self.assertIn("conclave+reflect minus conclave of the same build and seed, paired over the 3 "
                      "tasks both ran (on pinned sampling, a run the switch never acted in is one run "
                      "of both): +33% pass@1", table)
        self.assertIn('conclave+verify.disabled=["repair.partial-file-write"] minus conclave of the '
                      "same build and seed, paired over the 3 tasks both ran (on pinned sampling, a run "
                      "the switch never acted in is one run of both): +33% pass@1", table)

    def test_pi_on_the_same_pinned_pass_is_paired_with_every_run_standing_for_the_team(self):
        rows = self.rows() + [row(task, "pi", solved=task == "HE-3", **self.PINS)
                              for task in ("HE-1", "HE-2", "HE-3")]
        table = bench.by_task(rows)
        # HE-1 and HE-3 ran plain; HE-2's reflecting run never reflected, so it is the
        # team's run there: solved against pi's unsolved.
        self.assertIn("conclave minus pi, paired over the 3 tasks both ran (on pinned sampling, a run "
                      "of a switch's arm in which the switch never acted is a run of the team): "
                      "+0% pass@1", table)
        # Without the stand-in only two tasks pair, and the team looks worse than it ran.
        alone = [r for r in rows if not (r["task"] == "HE-2" and r["system"] == "conclave+reflect")]
        self.assertIn("conclave minus pi, paired over the 2 tasks both ran: -50% pass@1", bench.by_task(alone))

    def test_another_arm_on_the_same_pins_is_paired_with_the_runs_standing_for_the_team(self):
        rows = self.rows() + [row(task, "conclave-pi", solved=True, **self.PINS) for task in ("HE-2", "HE-3")]
        # HE-2's team run is the reflecting run that never reflected (solved), HE-3 its own
        # run (unsolved): both pair, where the team's own runs alone would pair HE-3 only.
        self.assertIn("conclave-pi minus conclave of the same build and seed, paired over the 2 tasks "
                      "both ran: +50% pass@1", bench.by_task(rows))

    def test_error_strategies_off_pairs_with_the_default_team_where_both_ran(self):
        rows = self.rows() + [row("HE-2", bench.STRATEGIES_OFF, **self.PINS),
                              row("HE-3", bench.STRATEGIES_OFF, solved=True, **self.PINS)]
        # HE-2's team run is the reflecting run that never reflected (solved against the
        # off arm's unsolved); HE-1 has no run with the strategies off, and as they act
        # in every run, no run stands for both arms: it is left out.
        self.assertIn("conclave+errorStrategies=false minus conclave of the same build and seed, "
                      "paired over the 2 tasks both ran: +0% pass@1", bench.by_task(rows))
        alone = [r for r in rows if not (r["task"] == "HE-2" and r["system"] == "conclave+reflect")]
        self.assertIn("conclave+errorStrategies=false minus conclave of the same build and seed, "
                      "paired over the 1 tasks both ran: +100% pass@1", bench.by_task(alone))

    def test_once_a_repeat_differs_only_the_tasks_both_arms_ran_are_paired(self):
        rows = [r if (r["task"], r["system"]) != ("HE-3", "conclave") else {**r, "calls": 11}
                for r in self.rows()]
        table = bench.by_task(rows)
        self.assertIn("conclave+reflect minus conclave of the same build and seed, paired over the 2 "
                      "tasks both ran: +50% pass@1", table)


if __name__ == "__main__":
    unittest.main()


class BenchmarksDocument(unittest.TestCase):
    """BENCHMARKS.md's real-model section is made from the committed rows."""

    def test_the_committed_section_is_current_with_the_committed_rows(self):
        import render_benchmarks
        self.assertEqual(render_benchmarks.main(["--check"]), 0,
                         "run scripts/realmodel/render_benchmarks.py after adding rows")

    def test_docs_checks_lists_every_rule_it_describes_with_its_held_out_counts(self):
        import render_benchmarks
        doc = ("## Syntax\n\n| id | catches |\n| --- | --- |\n| `syntax.python` | x |\n| `syntax.rust` | y |\n\n"
               "## Repairs\n\n| id | catches |\n| --- | --- |\n| `repair.json` | z |\n\n"
               "## Counts on the real model\n\nEvery rule, over the 3 held-out runs whose rows record them:\n\n"
               "| rule | runs it fired in | of those solved | false alarms |\n| --- | --- | --- | --- |\n"
               "| `syntax.python` | 1 | 1 | 0 |\n\nWhat the counts say.\n")
        held = [row("HE-045-triangle_area", "conclave", solved=True,
                    rulesFired={"syntax.python": 2, "repair.json": 1}, rulesFailingAtEnd=["syntax.python"]),
                row("01-pager-off-by-one", "conclave", rulesFired={"syntax.python": 1}, rulesFailingAtEnd=[]),
                # pi's rows carry the fields empty: pi runs no checks, so it is not counted.
                row("01-pager-off-by-one", "pi", rulesFired={}, rulesFailingAtEnd=[])]
        self.assertEqual(render_benchmarks.checks_counts(doc, held).split("## Counts on the real model")[1], (
            "\n\nEvery rule, over the 2 held-out runs whose rows record them:\n\n"
            "| rule | runs it fired in | of those solved | false alarms |\n| --- | --- | --- | --- |\n"
            "| `syntax.python` | 2 | 1 | 1 |\n| `syntax.rust` | 0 | — | — |\n| `repair.json` | 1 | 1 | 0 |"
            "\n\nWhat the counts say.\n"))

    def test_a_pinned_pass_with_pi_beside_it_is_paired_with_the_team_s_runs_there(self):
        import render_benchmarks
        pins = {"seed": 27, "temperature": 0.8, "timeout": 600}
        held = [
            row("HE-1", "conclave+reflect", reflections=1, solved=True, toReview=True, **pins),
            row("HE-1", "conclave", solved=True, claimed=True, **pins),
            # Never reflected, and the plain team repeated such a run call for call (HE-5):
            # the reflecting run is the team's run on HE-2.
            row("HE-2", "conclave+reflect", reflections=0, **pins),
            row("HE-5", "conclave+reflect", reflections=0, **pins),
            row("HE-5", "conclave", **pins),
            row("01-pager", "conclave", solved=True, toReview=True, **pins),
            row("HE-1", "pi", **pins), row("HE-2", "pi", solved=True, **pins), row("HE-5", "pi", **pins),
            row("01-pager", "pi", **pins),
            # Another build's pi, and unpinned team runs, belong to no such pass.
            row("HE-3", "pi", commit="def5678", **pins),
            row("HE-3", "conclave", solved=True),
        ]
        self.assertEqual(render_benchmarks.pinned_with_pi(held), (
            "  - `abc1234`, seed 27, temperature 0.8, 600 s, 0% faults: the team solved 2 of 4 (2 completed "
            "or handed to review right; 0 false of 1 claims), pi 1 of 4; the team minus pi +25% (-50% to "
            "+100%); 3 HumanEval +0% (-100% to +100%); 1 edit +100% (+100% to +100%)."))
        self.assertEqual(render_benchmarks.pinned_with_pi([r for r in held if r["system"] != "pi"]),
                         "  - None yet.")

    def test_a_new_pass_over_the_edit_tasks_gets_its_line_and_its_counts(self):
        import render_benchmarks
        edits = [f"{n:02d}-task" for n in range(1, 15)]
        old = [row(t, "conclave", commit="old1234", at="2026-11-01T00:00:00Z") for t in edits]
        new = [row(t, s, commit="new5678", seed=27, at="2026-11-28T00:00:00Z",
                   solved=(s == "conclave" and t in ("02-task", "09-task")),
                   claimed=(s == "conclave" and t in ("02-task", "05-task")))
               for t in edits for s in ("conclave", "pi")]
        with tempfile.TemporaryDirectory() as d:
            rows_file(d, "heldout-old1234-edit.jsonl", old)
            rows_file(d, "heldout-new5678-edit.jsonl", new)
            rows_file(d, "heldout-running.jsonl", [])  # a pass just started: no rows yet
            template = Path(d) / "section.md"
            template.write_text("## The team on a real model\n\n{{EDIT}}\n\n{{PASSES}}\n")
            text = render_benchmarks.section(d, template)
            document = "# Bench\n\nkept\n\n## The team on a real model\n\nold\n\n### ACP on the real model (one run)\n\nkept too\n"
            spliced = render_benchmarks.spliced(document, text)
        lines = [line for line in text.splitlines() if "new5678" in line and "edit.jsonl" in line]
        self.assertIn("| `heldout-new5678-edit.jsonl` | conclave | `new5678` | 27 | 0% | 2 of 14 (02, 09) | 0 (0) | 2 (1) |",
                      lines[0])
        self.assertIn("| pi | `new5678` | 27 | 0% | 0 of 14 | — | — |", lines[1])
        # Oldest pass first.
        self.assertLess(text.index("old1234"), text.index("new5678"))
        self.assertNotIn("heldout-running.jsonl", text)
        self.assertTrue(spliced.startswith("# Bench\n\nkept\n\n## The team on a real model\n\n  | rows"))
        self.assertTrue(spliced.endswith("### ACP on the real model (one run)\n\nkept too\n"))
        self.assertNotIn("\nold\n", spliced)

    def test_claims_and_lost_work_are_counted_before_and_since_exit_3(self):
        import render_benchmarks
        first = render_benchmarks.EXIT_3_FIRST_BUILD
        held = [
            row("HE-1", "conclave", commit="old0001", at="2026-01-01T00:00:00Z", claimed=True),
            row("HE-2", "conclave", commit="old0001", at="2026-01-01T00:01:00Z", claimed=True, solved=True),
            row("HE-3", "conclave", commit="old0001", at="2026-01-01T00:02:00Z", solved=True),
            row("HE-1", "conclave", commit=first, at="2026-02-01T00:00:00Z", toReview=True, solved=True),
            row("HE-2", "conclave+x=1", commit=first, at="2026-02-01T00:01:00Z", toReview=True),
            row("HE-3", "conclave", commit="new0002", at="2026-03-01T00:00:00Z", claimed=True, solved=True),
            row("HE-4", "conclave", commit="new0002", at="2026-03-01T00:01:00Z", solved=True),
            row("HE-4", "pi", commit="new0002", at="2026-03-01T00:02:00Z", claimed=True),
        ]
        self.assertEqual(render_benchmarks.claims(held), {
            "CLAIMS_SINCE": 1, "FALSE_SINCE": 0, "BUILDS_SINCE": 2, "REVIEWS": 2,
            "REVIEWS_RIGHT": 1, "CLAIMS_BEFORE": 2, "FALSE_BEFORE": 1, "LOST": 2, "LOST_SINCE": 1})

    def test_a_figure_the_prose_names_and_nothing_fills_is_an_error(self):
        import render_benchmarks
        with tempfile.TemporaryDirectory() as d:
            template = Path(d) / "section.md"
            template.write_text("## The team on a real model\n\n{{NO_SUCH_FIGURE}}\n")
            with self.assertRaises(ValueError):
                render_benchmarks.section(d, template)
