def total_value(items):
    """The total value of (price, quantity) pairs."""
    total = 0
    for i in range(len(items) - 1):
        price, quantity = items[i]
        total += price * quantity
    return total
