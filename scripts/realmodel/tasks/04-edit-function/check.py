# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
from stats import mean, spread
assert mean([]) == 0.0
assert mean([1, 2, 3]) == 2
assert spread([1, 5, 3]) == 4
