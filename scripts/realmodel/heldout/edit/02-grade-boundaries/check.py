# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

from grades import letter_grade, class_report

cases = {100: "A", 90: "A", 89.5: "B", 80: "B", 79: "C", 70: "C", 69.9: "D",
         61: "D", 60: "D", 59: "F", 0: "F", 95: "A", 85: "B"}
for score, letter in cases.items():
    assert letter_grade(score) == letter, (score, letter_grade(score), letter)
# What was there still works.
assert class_report([90, 85, 59, 60, 70, 100]) == {"A": 2, "B": 1, "C": 1, "D": 1, "F": 1}
assert class_report([]) == {"A": 0, "B": 0, "C": 0, "D": 0, "F": 0}
