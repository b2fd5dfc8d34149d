# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from users import display_name, initials, sort_users

ada = {"first": "Ada", "last": "Lovelace", "email": "ada@example.com"}
cher = {"first": "Cher", "last": None, "email": "cher@example.com"}
alan = {"first": "Alan", "last": "Turing", "email": "alan@example.com"}
bono = {"first": "Bono", "last": None, "email": "bono@example.com"}
assert display_name(ada) == "Ada Lovelace", display_name(ada)
assert display_name(cher) == "Cher", repr(display_name(cher))
assert display_name(bono) == "Bono", repr(display_name(bono))
assert sort_users([cher, alan, bono, ada]) == [ada, alan, bono, cher]
# What was there still works.
assert initials(ada) == "A.L." and initials(cher) == "C."
