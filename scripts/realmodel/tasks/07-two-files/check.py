# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
import subprocess, sys
from geometry import perimeter, area
assert perimeter(3, 4) == 14 and perimeter(1, 1) == 4
assert area(3, 4) == 12
r = subprocess.run([sys.executable, "report.py"], capture_output=True, text=True, timeout=20)
lines = r.stdout.strip().splitlines()
assert lines[0] == "area: 12", lines
assert lines[1].replace(".0", "") == "perimeter: 14", lines
assert "perimeter(" in open("report.py").read()
