# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from pager import page_count, page_items, page_label

items = list("abcdefghij")
assert page_items(items, 1, 3) == list("abc"), page_items(items, 1, 3)
assert page_items(items, 2, 3) == list("def")
assert page_items(items, 4, 3) == ["j"]
assert page_items(items, 5, 3) == []
assert page_items(items, 2, 5) == list("fghij")
assert page_items(list(range(7)), 1, 10) == list(range(7))
assert page_items([], 1, 4) == []
# Every item is on exactly one page.
shown = [x for p in range(1, page_count(len(items), 4) + 1) for x in page_items(items, p, 4)]
assert shown == items, shown
# What was there still works.
assert page_count(10, 3) == 4 and page_count(9, 3) == 3 and page_count(0, 3) == 0
assert page_label(2, 10, 3) == "page 2 of 4"
