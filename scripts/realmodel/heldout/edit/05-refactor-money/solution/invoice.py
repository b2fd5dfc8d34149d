"""Text lines of an invoice. Amounts are shown like $1,234.50 or -$3.00."""


def format_money(amount):
    text = f"{abs(amount):,.2f}"
    if amount < 0:
        return "-$" + text
    return "$" + text


def line_text(name, quantity, unit_price):
    return f"{name} x{quantity}: {format_money(quantity * unit_price)}"


def subtotal_text(lines):
    amount = sum(quantity * unit_price for _, quantity, unit_price in lines)
    return f"Subtotal: {format_money(amount)}"


def total_text(lines, tax_rate):
    subtotal = sum(quantity * unit_price for _, quantity, unit_price in lines)
    return f"Total (tax {tax_rate:.0%}): {format_money(subtotal * (1 + tax_rate))}"
