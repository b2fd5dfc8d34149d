"""Moves money between two accounts."""
from bank import Acct


def transfer(source, target, amount):
    """Moves amount from the source account to the target account."""
    source.withdraw(amount)
    target.deposit(amount)


if __name__ == "__main__":
    alice = Acct("alice", 100)
    bob = Acct("bob", 20)
    transfer(alice, bob, 30)
    print(alice.owner, alice.balance)
    print(bob.owner, bob.balance)
