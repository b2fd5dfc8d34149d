"""Checks a sign-up form from the command line.

    python signup.py USERNAME EMAIL
"""
import sys

from validators import is_valid_email, is_valid_username


def check_form(username, email):
    """The list of problems with the form; empty when it is fine."""
    problems = []
    if not is_valid_username(username):
        problems.append("username must be 3 to 16 letters, digits or underscores")
    if not is_valid_email(email):
        problems.append("email address is not valid")
    return problems


if __name__ == "__main__":
    problems = check_form(sys.argv[1], sys.argv[2])
    for problem in problems:
        print(problem)
    if not problems:
        print("ok")
    sys.exit(1 if problems else 0)
