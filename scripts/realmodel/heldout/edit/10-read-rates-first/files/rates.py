"""Shipping rates, as agreed with the carrier for this year."""

BASE_FEE = 3.75        # for every parcel
PER_KG = 1.40          # for every started kilogram
MAX_FEE = 18.00        # no parcel costs more than this to ship
FREE_FROM_ORDER = 80   # orders worth this much or more ship for free


def billable_kg(weight_kg):
    """Every started kilogram counts as a whole one: 0.2 -> 1, 2.0 -> 2, 2.1 -> 3."""
    whole = int(weight_kg)
    return whole if whole == weight_kg else whole + 1
