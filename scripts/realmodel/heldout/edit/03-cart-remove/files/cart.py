"""A shopping cart: it maps an item's name to (unit price, quantity)."""


class Cart:
    def __init__(self):
        self.items = {}

    def add(self, name, price, quantity=1):
        """Adds quantity units of an item; adding an item again raises its quantity."""
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        if name in self.items:
            old_price, old_quantity = self.items[name]
            self.items[name] = (old_price, old_quantity + quantity)
        else:
            self.items[name] = (price, quantity)

    def total(self):
        """The price of everything in the cart."""
        return sum(price * quantity for price, quantity in self.items.values())

    def __len__(self):
        """The number of units in the cart."""
        return sum(quantity for _, quantity in self.items.values())
