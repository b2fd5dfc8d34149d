"""Letter grades for exam scores (0 to 100)."""

BOUNDARIES = [(90, "A"), (80, "B"), (70, "C"), (60, "D")]


def letter_grade(score):
    """The letter for a score: 90 and up is an A, 80 and up a B, 70 and up a C,
    60 and up a D, and anything lower an F."""
    for limit, letter in BOUNDARIES:
        if score > limit:
            return letter
    return "F"


def class_report(scores):
    """A dict mapping each letter to how many of the scores got it."""
    report = {letter: 0 for _, letter in BOUNDARIES}
    report["F"] = 0
    for score in scores:
        report[letter_grade(score)] += 1
    return report
