"""Tests of replay_runner.py: which task a packed run was, and that held-out runs are refused."""
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
