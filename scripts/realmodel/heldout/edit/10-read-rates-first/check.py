# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from orders import order_value, shipping_cost

# (weight_kg, order_total) -> cost, from rates.py: 3.75 + 1.40 per started kg, at most
# 18.00, free from an order of 80.
cases = {(0.2, 10): 5.15, (1, 10): 5.15, (2.0, 10): 6.55, (2.1, 10): 7.95, (5, 79.99): 10.75,
         (10, 10): 17.75, (11, 10): 18.0, (20, 10): 18.0, (5, 80): 0.0, (30, 150): 0.0,
         (0.5, 0): 5.15}
for (weight, total), want in cases.items():
    got = shipping_cost(weight, total)
    assert isinstance(got, (int, float)) and abs(got - want) < 1e-6, ((weight, total), got, want)
# What was there still works.
assert order_value([(2.5, 4), (10, 1)]) == 20.0
assert order_value([]) == 0
