def mean(values):
    """The arithmetic mean of a list of numbers."""
    return sum(values) / len(values)


def spread(values):
    """The largest value minus the smallest."""
    return max(values) - min(values)
