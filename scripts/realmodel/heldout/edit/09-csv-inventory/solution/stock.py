"""Stock levels of the shop, kept in inventory.csv."""
import csv


def load_inventory(path):
    """Reads a CSV file with the columns sku,name,price,qty (like inventory.csv) and
    returns a dict mapping each sku to a tuple (name, price, qty), with price a float
    and qty an int."""
    inventory = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            inventory[row["sku"]] = (row["name"], float(row["price"]), int(row["qty"]))
    return inventory


def low_stock(inventory, limit=5):
    """The skus whose quantity is below limit, sorted."""
    return sorted(sku for sku, (_, _, qty) in inventory.items() if qty < limit)


def stock_value(inventory):
    """The value of everything in stock."""
    return round(sum(price * qty for _, price, qty in inventory.values()), 2)


if __name__ == "__main__":
    inventory = load_inventory("inventory.csv")
    print("low stock:", ", ".join(low_stock(inventory)))
    print("value:", stock_value(inventory))
