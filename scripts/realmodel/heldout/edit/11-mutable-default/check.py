# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from notes import Note, find

a = Note("buy milk")
a.tag("shopping")
a.tag("shopping")
b = Note("call mum")
assert not b.has_tag("shopping"), b.tags
assert list(b.tags) == [], b.tags
b.tag("family")
c = Note("fix bike")
assert list(c.tags) == [], c.tags
assert list(a.tags) == ["shopping"] and list(b.tags) == ["family"], (a.tags, b.tags)
# Tags given when the note is made still count.
d = Note("plan trip", ["travel"])
assert d.has_tag("travel") and not d.has_tag("family")
d.tag("summer")
assert list(d.tags) == ["travel", "summer"], d.tags
e = Note("pack bags", tags=["travel"])
assert e.has_tag("travel")
assert find([a, b, c, d, e], "travel") == ["plan trip", "pack bags"]
assert find([a, b, c], "shopping") == ["buy milk"]
assert find([], "x") == []
# Many notes made in a loop stay apart.
many = [Note(str(i)) for i in range(5)]
for i, note in enumerate(many):
    note.tag(f"t{i}")
assert [list(n.tags) for n in many] == [[f"t{i}"] for i in range(5)]
