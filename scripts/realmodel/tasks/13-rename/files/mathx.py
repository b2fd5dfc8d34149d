def calc(prices):
    """The sum of the prices, rounded to 2 decimals."""
    return round(sum(prices), 2)
