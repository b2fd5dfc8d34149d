# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
from app import get_timeout
v = get_timeout()
assert v == 45 and isinstance(v, int), repr(v)
