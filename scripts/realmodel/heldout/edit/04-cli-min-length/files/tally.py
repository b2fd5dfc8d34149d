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
    args = parser.parse_args()
    with open(args.path) as f:
        counts = Counter(words(f.read()))
    for word, count in counts.most_common(args.top):
        print(f"{word} {count}")


if __name__ == "__main__":
    main()
