"""Converting identifiers between camelCase and snake_case."""


def to_snake(name):
    """'userId' -> 'user_id', 'HelloWorld' -> 'hello_world'."""
    result = ""
    for i, ch in enumerate(name):
        if ch.isupper():
            if i > 0:
                result += "_"
            result += ch.lower()
        else:
            result += ch
    return result


def to_camel(name):
    """'user_id' -> 'userId'."""
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)
