"""Orders and what they cost."""


def order_value(lines):
    """The value of an order's (unit_price, quantity) lines."""
    return sum(price * quantity for price, quantity in lines)


def shipping_cost(weight_kg, order_total):
    """What shipping a parcel of weight_kg costs, for an order worth order_total."""
