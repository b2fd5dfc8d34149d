# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
from inventory import total_value
assert total_value([(2, 3), (5, 1)]) == 11
assert total_value([(4, 2)]) == 8
assert total_value([]) == 0
