# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
import subprocess, sys
import mathx
assert hasattr(mathx, "compute_total") and not hasattr(mathx, "calc")
assert mathx.compute_total([1.25, 2.5]) == 3.75
r = subprocess.run([sys.executable, "main.py"], capture_output=True, text=True, timeout=20)
assert r.returncode == 0 and r.stdout.strip() == "6.75", (r.stdout, r.stderr)
