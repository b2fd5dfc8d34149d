# Hidden check: run in the task's workspace; exit 0 means solved.
import ast, os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

import invoice

# The new function.
fm = invoice.format_money
assert fm(1234.5) == "$1,234.50", fm(1234.5)
assert fm(-3) == "-$3.00", fm(-3)
assert fm(0) == "$0.00", fm(0)
assert fm(1000000) == "$1,000,000.00", fm(1000000)
assert fm(0.125 + 0.001) == "$0.13", fm(0.126)

# Behaviour unchanged.
lines = [("pen", 3, 1.5), ("desk", 2, 640.25), ("refund", 1, -20)]
assert invoice.line_text("pen", 3, 1.5) == "pen x3: $4.50"
assert invoice.line_text("refund", 1, -20) == "refund x1: -$20.00"
assert invoice.line_text("chair", 10, 199.99) == "chair x10: $1,999.90"
assert invoice.subtotal_text(lines) == "Subtotal: $1,265.00", invoice.subtotal_text(lines)
assert invoice.subtotal_text([("refund", 2, -7.5)]) == "Subtotal: -$15.00"
assert invoice.total_text(lines, 0.2) == "Total (tax 20%): $1,518.00", invoice.total_text(lines, 0.2)
assert invoice.total_text([("pen", 1, 10)], 0.07) == "Total (tax 7%): $10.70"

# The duplication is gone: each of the three calls format_money, and only format_money
# builds the "-$" prefix.
tree = ast.parse(open("invoice.py").read())
functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def calls_format_money(node):
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id == "format_money") or \
               (isinstance(f, ast.Attribute) and f.attr == "format_money"):
                return True
    return False


for name in ("line_text", "subtotal_text", "total_text"):
    assert name in functions, f"{name} is gone"
    assert calls_format_money(functions[name]), f"{name} does not use format_money"
    for n in ast.walk(functions[name]):
        assert not (isinstance(n, ast.Constant) and isinstance(n.value, str) and "-$" in n.value), \
            f"{name} still formats the amount itself"
