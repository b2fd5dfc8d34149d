"""Tests of second_reading.py: reading the model's answer, and weighing the readings."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import second_reading  # noqa: E402


def row(run, solved, code, test, right, reading):
    return {"transcripts": "devhe-x.tar.gz", "run": run, "solved": solved, "assert": f"f() == {test}",
            "code": code, "test": test, "right": right, "problem": "HE-999-f", "reading": reading}


class Reading(unittest.TestCase):
    def test_the_last_result_line_is_the_reading(self):
        answer = "First RESULT: 1 was a guess.\nStep by step...\nRESULT: `[1, 2]`"
        self.assertEqual(second_reading.reading_of(answer), "[1, 2]")

    def test_an_answer_without_a_readable_value_gives_none(self):
        self.assertIsNone(second_reading.reading_of("It returns the list of pairs."))
        self.assertIsNone(second_reading.reading_of("RESULT: the shifted digits"))

    def test_a_string_written_without_quotes_is_the_same_value(self):
        self.assertTrue(second_reading.same("'12345'", "12345"))
        self.assertFalse(second_reading.same("'12345'", "'54321'"))
        self.assertFalse(second_reading.same(None, "1"))


class Weighing(unittest.TestCase):
    def test_runs_are_sorted_by_whether_a_reading_took_the_code_s_side_or_the_test_s(self):
        rows = [
            # Right code, the test wrong: the reading takes the code's value.
            row("a", True, "False", "True", "False", "False"),
            # Wrong code, the test right: the reading confirms the test.
            row("b", False, "12", "14", "14", "14"),
            # Wrong code: one reading takes the code's side, another confirms the test.
            row("c", False, "'hello'", "'ehllo'", "'ehllo'", "'hello'"),
            row("c", False, "3", "1", "1", "1"),
            # Wrong code, no value read.
            row("d", False, "[1]", "[3]", "[3]", None),
        ]
        text = second_reading.summary(rows)
        self.assertIn("- the code wrong (4): no value 1, the code's 1, the test's 2", text)
        self.assertIn("- the test wrong (1): the code's 1", text)
        self.assertIn("- right code: 1; a reading sides with the code and none with the test: 1; "
                      "no reading confirms the test: 1", text)
        self.assertIn("- wrong code: 3; a reading sides with the code and none with the test: 0; "
                      "no reading confirms the test: 1", text)

    def test_held_out_transcripts_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "rows.jsonl"
            sys.argv = ["second_reading.py", "--out", str(out), "heldout-x.tar.gz"]
            with self.assertRaises(SystemExit) as stopped:
                second_reading.main()
            self.assertIn("held-out", str(stopped.exception))
            self.assertFalse(out.exists())


if __name__ == "__main__":
    unittest.main()
