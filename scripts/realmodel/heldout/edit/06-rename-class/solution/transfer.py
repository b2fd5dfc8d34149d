"""Moves money between two accounts."""
from bank import Account


def transfer(source, target, amount):
    """Moves amount from the source account to the target account."""
    source.withdraw(amount)
    target.deposit(amount)


if __name__ == "__main__":
    alice = Account("alice", 100)
    bob = Account("bob", 20)
    transfer(alice, bob, 30)
    print(alice.owner, alice.balance)
    print(bob.owner, bob.balance)
