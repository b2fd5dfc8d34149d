"""Checks for the fields of the sign-up form."""
import re


def is_valid_username(name):
    """3 to 16 characters, each a letter, a digit or an underscore."""
    return re.fullmatch(r"[A-Za-z0-9_]{3,16}", name) is not None


def is_valid_email(address):
    """Exactly one @ with something before it, and after it a domain that contains a
    dot and does not start or end with one."""
    if address.count("@") != 1:
        return False
    local, domain = address.split("@")
    return bool(local) and "." in domain and not domain.startswith(".") and not domain.endswith(".")
