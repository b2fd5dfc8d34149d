"""Orders and what they cost."""
from rates import BASE_FEE, FREE_FROM_ORDER, MAX_FEE, PER_KG, billable_kg


def order_value(lines):
    """The value of an order's (unit_price, quantity) lines."""
    return sum(price * quantity for price, quantity in lines)


def shipping_cost(weight_kg, order_total):
    """What shipping a parcel of weight_kg costs, for an order worth order_total."""
    if order_total >= FREE_FROM_ORDER:
        return 0.0
    return min(BASE_FEE + PER_KG * billable_kg(weight_kg), MAX_FEE)
