"""Prints the most common words of a text file, one 'word count' a line.

    python tally.py notes.txt --top 5
"""
import argparse
import re
from collections import Counter


def words(text):
    return re.findall(r"[a-z']+", text.lower())


def main():
    parser = argparse.ArgumentParser(description="Count the words of a text file.")
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=10, help="how many words to show")
    parser.add_argument("--min-length", type=int, default=1,
                        help="do not count words shorter than this")
    args = parser.parse_args()
    with open(args.path) as f:
        counts = Counter(w for w in words(f.read()) if len(w) >= args.min_length)
    for word, count in counts.most_common(args.top):
        print(f"{word} {count}")


if __name__ == "__main__":
    main()
