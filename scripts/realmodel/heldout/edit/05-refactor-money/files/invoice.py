"""Text lines of an invoice. Amounts are shown like $1,234.50 or -$3.00."""


def line_text(name, quantity, unit_price):
    amount = quantity * unit_price
    text = f"{abs(amount):,.2f}"
    if amount < 0:
        text = "-$" + text
    else:
        text = "$" + text
    return f"{name} x{quantity}: {text}"


def subtotal_text(lines):
    amount = sum(quantity * unit_price for _, quantity, unit_price in lines)
    text = f"{abs(amount):,.2f}"
    if amount < 0:
        text = "-$" + text
    else:
        text = "$" + text
    return f"Subtotal: {text}"


def total_text(lines, tax_rate):
    subtotal = sum(quantity * unit_price for _, quantity, unit_price in lines)
    amount = subtotal * (1 + tax_rate)
    text = f"{abs(amount):,.2f}"
    if amount < 0:
        text = "-$" + text
    else:
        text = "$" + text
    return f"Total (tax {tax_rate:.0%}): {text}"
