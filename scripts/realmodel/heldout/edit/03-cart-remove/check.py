# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from cart import Cart

cart = Cart()
cart.add("apple", 0.5, 3)
cart.add("bread", 2.0)
assert len(cart) == 4 and abs(cart.total() - 3.5) < 1e-9
cart.remove("apple")
assert cart.items["apple"] == (0.5, 2), cart.items
assert len(cart) == 3 and abs(cart.total() - 3.0) < 1e-9
cart.remove("bread")
assert "bread" not in cart.items, cart.items
cart.remove("apple")
cart.remove("apple")
assert cart.items == {}, cart.items
assert len(cart) == 0 and cart.total() == 0
for name in ("apple", "pear"):
    try:
        cart.remove(name)
    except KeyError:
        pass
    else:
        raise AssertionError(f"remove({name!r}) on a cart without it raised no KeyError")
# What was there still works.
cart.add("tea", 4.0, 2)
cart.add("tea", 9.0)
assert cart.items == {"tea": (4.0, 3)} and cart.total() == 12.0
try:
    cart.add("milk", 1.0, 0)
except ValueError:
    pass
else:
    raise AssertionError("add with quantity 0 raised no ValueError")
