# Hidden check: run in the task's workspace; exit 0 means solved.
import os, re, subprocess, sys, tempfile
from collections import Counter

TEXT = ("A cat and a dog. The cat sat on a mat, the dog sat on the cat's bed.\n"
        "Cats and dogs: a cat, a dog, an owl and a parrot sat in the garden.\n")


def expected(min_length, top):
    words = [w for w in re.findall(r"[a-z']+", TEXT.lower()) if len(w) >= min_length]
    return [f"{w} {c}" for w, c in Counter(words).most_common(top)]


def run(*args):
    r = subprocess.run([sys.executable, "tally.py", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout.splitlines()


with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "text.txt")
    with open(path, "w") as f:
        f.write(TEXT)
    # Without the option: as before.
    assert run(path) == expected(1, 10), run(path)
    assert run(path, "--top", "3") == expected(1, 3)
    # With it.
    got = run(path, "--min-length", "4")
    assert got == expected(4, 10), got
    assert got and all(len(line.split()[0]) >= 4 for line in got), got
    assert run(path, "--min-length", "3", "--top", "2") == expected(3, 2)
    assert run("--top", "4", path, "--min-length", "5") == expected(5, 4)
    assert run(path, "--min-length", "1") == expected(1, 10)
    assert run(path, "--min-length", "50") == []
r = subprocess.run([sys.executable, "tally.py", "--help"], capture_output=True, text=True, timeout=30)
assert r.returncode == 0 and "--min-length" in r.stdout, r.stdout + r.stderr
