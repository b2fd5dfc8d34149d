# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
import subprocess, sys
out = subprocess.run([sys.executable, "hello.py"], capture_output=True, text=True, timeout=20)
assert out.returncode == 0, out.stderr
assert "hello world" in out.stdout.lower().replace(",", ""), out.stdout
