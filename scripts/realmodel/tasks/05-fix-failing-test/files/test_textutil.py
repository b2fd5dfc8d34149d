import unittest

from textutil import word_count


class WordCountTest(unittest.TestCase):
    def test_counts_words_separated_by_any_whitespace(self):
        self.assertEqual(word_count("one  two\tthree\nfour"), 4)
        self.assertEqual(word_count(""), 0)


if __name__ == "__main__":
    unittest.main()
