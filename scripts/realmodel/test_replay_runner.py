"""Tests of replay_runner.py: which task a run was, where its last test is found, and that
packed held-out runs are refused."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_runner  # noqa: E402


class Replay(unittest.TestCase):
    def test_a_run_s_folder_names_its_task(self):
        he = replay_runner.task_dir("bench-conclave-HE-050-decode_shift-4ekl3o81")
        self.assertEqual(he.name, "HE-050-decode_shift")
        edit = replay_runner.task_dir("bench-conclave+reflect+shareKnowledge-11-new-module-8sw2iuzd")
        self.assertEqual(edit.name, "11-new-module")
        self.assertTrue((edit / "check.py").exists())

    def test_a_kept_held_out_run_names_a_held_out_task(self):
        he = replay_runner.task_dir("bench-conclave+reflect-HE-045-triangle_area-fg7dsnd6", held_out=True)
        self.assertEqual(he.parent.name, "humaneval")
        self.assertTrue((he / "check.py").exists())
        edit = replay_runner.task_dir("bench-conclave-01-pager-off-by-one-9qbzg7yf", held_out=True)
        self.assertEqual(edit.parent.name, "edit")
        self.assertTrue((edit / "check.py").exists())
        # A dev task's name is not looked for among the held-out ones.
        self.assertIsNone(replay_runner.task_dir("bench-conclave-HE-050-decode_shift-4ekl3o81", held_out=True))

    def test_the_last_test_of_each_kept_run_is_read_in_place(self):
        with tempfile.TemporaryDirectory() as tmp:
            kept = Path(tmp)
            for run, checks in (("bench-conclave-HE-045-triangle_area-aaaaaaaa", ["1", "2"]),
                                ("bench-conclave-01-pager-off-by-one-bbbbbbbb", []),
                                ("notes", ["1"])):
                for n in checks:
                    check = kept / run / "ws" / ".conclave" / "checks" / n
                    check.mkdir(parents=True)
                    (check / "acceptance_test.py").write_text(f"# test {n}\n")
            found = list(replay_runner.final_tests(str(kept), "bench-*"))
        # The run that wrote no test is passed over, and so is a folder that is not a run.
        self.assertEqual([(run.name, test.parent.name) for run, _, test in found],
                         [("bench-conclave-HE-045-triangle_area-aaaaaaaa", "2")])

    def test_held_out_mode_wants_a_folder_of_kept_runs(self):
        sys.argv = ["replay_runner.py", "--before", "HEAD", "--held-out", "/nonexistent/kept"]
        with self.assertRaises(SystemExit) as stopped:
            replay_runner.main()
        self.assertIn("not a directory", str(stopped.exception))

    def test_the_runner_of_a_commit_and_of_the_work_tree_are_written_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            runner = replay_runner.runner_at(None, Path(tmp))
            self.assertIn("def main():", runner.read_text())
            self.assertTrue((Path(tmp) / "definitions.py").exists())

    def test_held_out_transcripts_are_refused(self):
        sys.argv = ["replay_runner.py", "--before", "HEAD", "heldout-x.tar.gz"]
        with self.assertRaises(SystemExit) as stopped:
            replay_runner.main()
        self.assertIn("held-out", str(stopped.exception))


if __name__ == "__main__":
    unittest.main()
