# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
import subprocess, sys, tempfile, os
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("a\n\nb\n   \nc\n")
r = subprocess.run([sys.executable, "count_lines.py", f.name], capture_output=True, text=True, timeout=20)
os.unlink(f.name)
assert r.returncode == 0, r.stderr
assert r.stdout.strip() == "3", r.stdout
