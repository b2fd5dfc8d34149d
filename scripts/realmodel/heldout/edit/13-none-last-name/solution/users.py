"""User records: dicts with 'first', 'last' (None when unknown) and 'email'."""


def display_name(user):
    """'First Last', or just 'First' when the user has no last name."""
    if user["last"] is None:
        return user["first"]
    return user["first"] + " " + user["last"]


def initials(user):
    """'F.L.', or 'F.' when the user has no last name."""
    parts = [user["first"], user["last"]]
    return "".join(p[0].upper() + "." for p in parts if p)


def sort_users(users):
    """The users sorted by display name."""
    return sorted(users, key=display_name)
