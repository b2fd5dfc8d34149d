# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
import subprocess, sys
def run(*a):
    r = subprocess.run([sys.executable, "greet.py", *a], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()
assert run("Ada") == "Hello, Ada!"
assert run("--shout", "Ada") == "HELLO, ADA!"
