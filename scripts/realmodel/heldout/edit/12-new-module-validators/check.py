# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from validators import is_valid_email, is_valid_username

usernames = {"bob": True, "ab": False, "a" * 16: True, "a" * 17: False, "bob_99": True,
             "Bob99": True, "bob-99": False, "bo b": False, "": False, "___": True, "bob!": False}
for name, ok in usernames.items():
    assert bool(is_valid_username(name)) is ok, (name, ok)
emails = {"a@b.co": True, "first.last@mail.example.org": True, "ab.com": False,
          "a@@b.com": False, "a@b@c.com": False, "@b.com": False, "a@b": False,
          "a@.com": False, "a@b.com.": False, "": False}
for address, ok in emails.items():
    assert bool(is_valid_email(address)) is ok, (address, ok)

# signup.py, which imports the new module, works.
def run(*args):
    return subprocess.run([sys.executable, "signup.py", *args], capture_output=True, text=True, timeout=30)

r = run("alice_1", "alice@example.com")
assert r.returncode == 0 and r.stdout.strip() == "ok", (r.stdout, r.stderr)
r = run("x", "not-an-email")
assert r.returncode == 1 and r.stdout.splitlines() == [
    "username must be 3 to 16 letters, digits or underscores", "email address is not valid"], (r.stdout, r.stderr)
r = run("carol", "carol@example")
assert r.returncode == 1 and r.stdout.splitlines() == ["email address is not valid"], (r.stdout, r.stderr)
