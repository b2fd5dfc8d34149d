# Hidden check: run in the task's workspace; exit 0 means solved.
import ast, os, signal, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

import bank
import transfer

assert hasattr(bank, "Account") and not hasattr(bank, "Acct"), "bank.Account missing or bank.Acct still there"
a = bank.Account("carol", 50)
b = bank.Account("dave")
assert (a.owner, a.balance, b.balance) == ("carol", 50, 0)
transfer.transfer(a, b, 20)
assert (a.balance, b.balance) == (30, 20)
for bad in (lambda: a.withdraw(31), lambda: b.deposit(0)):
    try:
        bad()
    except ValueError:
        pass
    else:
        raise AssertionError("a ValueError is gone")
assert (a.balance, b.balance) == (30, 20)

# No code names the old class any more.
for path in ("bank.py", "transfer.py"):
    for node in ast.walk(ast.parse(open(path).read())):
        name = (node.id if isinstance(node, ast.Name) else
                node.name if isinstance(node, (ast.ClassDef, ast.alias)) else
                node.attr if isinstance(node, ast.Attribute) else None)
        assert name != "Acct", f"{path} still uses Acct"

r = subprocess.run([sys.executable, "transfer.py"], capture_output=True, text=True, timeout=30)
assert r.returncode == 0 and r.stdout.split() == ["alice", "70", "bob", "50"], (r.stdout, r.stderr)
