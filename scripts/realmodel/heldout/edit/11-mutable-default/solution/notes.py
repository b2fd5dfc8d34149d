"""Notes with tags."""


class Note:
    def __init__(self, text, tags=None):
        self.text = text
        self.tags = list(tags) if tags is not None else []

    def tag(self, name):
        """Adds a tag to the note, once."""
        if name not in self.tags:
            self.tags.append(name)

    def has_tag(self, name):
        return name in self.tags


def find(notes, tag):
    """The texts of the notes that have the tag."""
    return [note.text for note in notes if note.has_tag(tag)]
