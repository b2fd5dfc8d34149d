# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
from temperature import c_to_f, f_to_c
assert abs(c_to_f(100) - 212) < 1e-9 and abs(c_to_f(0) - 32) < 1e-9
assert abs(f_to_c(212) - 100) < 1e-9 and abs(f_to_c(-40) + 40) < 1e-9
