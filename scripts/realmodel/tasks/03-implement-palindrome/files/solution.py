def is_palindrome(text: str) -> bool:
    """True when text reads the same backwards, ignoring case and every character
    that is not a letter or a digit. The empty string is a palindrome."""
