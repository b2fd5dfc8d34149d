def word_count(text):
    """The number of words in text; words are separated by any whitespace."""
    return len(text.split(" "))
