def get_timeout():
    """The request timeout in seconds, as an int, from the project's defaults."""
