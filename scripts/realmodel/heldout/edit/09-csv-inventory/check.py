# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from stock import load_inventory, low_stock, stock_value

inv = load_inventory("inventory.csv")
assert isinstance(inv, dict) and len(inv) == 5, inv
assert inv["A100"] == ("Desk lamp", 24.9, 12), inv["A100"]
assert inv["A101"] == ("Cable, 2 m", 4.5, 140), inv["A101"]
assert inv["B201"] == ("Monitor stand", 39.95, 0), inv["B201"]
for name, price, qty in inv.values():
    assert type(name) is str and type(price) is float and type(qty) is int, (name, price, qty)

# Another file, not the one in the workspace.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "other.csv")
    with open(path, "w") as f:
        f.write('sku,name,price,qty\nZ1,"Tape, wide",3,7\nZ2,Glue,1.05,2\n')
    other = load_inventory(path)
    assert other == {"Z1": ("Tape, wide", 3.0, 7), "Z2": ("Glue", 1.05, 2)}, other
    assert type(other["Z1"][1]) is float
    empty = os.path.join(d, "empty.csv")
    with open(empty, "w") as f:
        f.write("sku,name,price,qty\n")
    assert load_inventory(empty) == {}
    # What was there still works on what it reads.
    assert low_stock(other) == ["Z2"] and low_stock(other, 10) == ["Z1", "Z2"]
    assert stock_value(other) == 23.1, stock_value(other)

r = subprocess.run([sys.executable, "stock.py"], capture_output=True, text=True, timeout=30)
assert r.returncode == 0, r.stderr
assert r.stdout.splitlines() == ["low stock: B200, B201", "value: 1446.3"], r.stdout
