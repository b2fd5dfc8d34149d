"""The Python rules of the checks, each on a general case that must fire and one of right
code that must not (a rule that fails right code is as much a defect as one that passes
wrong code). Run: `python3 -m unittest src/checks/python/test_checks.py` (cargo test does)."""

import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402


class Workspace:
    """A temp directory made the working directory, with files in it."""

    def __init__(self, files):
        self.files = files

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.cwd = os.getcwd()
        os.chdir(self.dir.name)
        for path, text in self.files.items():
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        return self

    def __exit__(self, *_):
        os.chdir(self.cwd)
        self.dir.cleanup()


def rules(found):
    return [f["rule"] for f in found]


def contracts(now, before, task="", whole=False, removes=False, disabled=(), may_lose=()):
    """Runs the contracts of the files `now` (path: text) against `before` (path: text or
    None for a new file); `may_lose` names what the task may take away."""
    with Workspace(now):
        pairs = [[path, textwrap.dedent(before[path]) if before.get(path) else None] for path in now]
        return checks.contracts(pairs, task, whole, removes, set(disabled), set(may_lose))


class Stubs(unittest.TestCase):
    def test_a_body_that_is_only_a_docstring_or_pass_is_a_stub(self):
        with Workspace({"m.py": '''
            def area(w, h):
                """The area."""

            def later():
                raise NotImplementedError

            def done(x):
                return x + 1
            '''}):
            found = checks.stubs(["m.py"])
        self.assertEqual(rules(found), ["python.stub", "python.stub"])
        self.assertIn("`area`", found[0]["message"])

    def test_abstract_methods_and_protocol_members_are_meant_to_be_empty(self):
        with Workspace({"m.py": '''
            from abc import ABC, abstractmethod
            from typing import Protocol

            class Shape(ABC):
                @abstractmethod
                def area(self): ...

            class Sized(Protocol):
                def size(self) -> int: ...
            '''}):
            self.assertEqual(checks.stubs(["m.py"]), [])


class Returns(unittest.TestCase):
    def test_a_function_that_promises_a_value_and_prints_it_breaks_its_promise(self):
        found = contracts({"m.py": '''
            def total(xs) -> int:
                print(sum(xs))

            def mean(xs):
                """Return the mean of xs."""
                print(sum(xs) / len(xs))
            '''}, {})
        self.assertEqual(rules(found), ["python.unkept-return", "python.unkept-return"])

    def test_the_promise_of_the_original_holds_after_a_rewrite(self):
        found = contracts(
            {"m.py": "def total(xs):\n    print(sum(xs))\n"},
            {"m.py": "def total(xs) -> int:\n    ...\n"},
        )
        self.assertEqual(rules(found), ["python.unkept-return"])
        self.assertIn("Keep the signature", found[0]["message"])

    def test_a_function_that_returns_or_yields_keeps_it(self):
        self.assertEqual(contracts({"m.py": '''
            def total(xs) -> int:
                if not xs:
                    return 0
                return sum(xs)

            def each(xs):
                """Return the items one by one."""
                yield from xs

            def show(xs) -> None:
                print(xs)
            '''}, {}), [])


class LostDefinitions(unittest.TestCase):
    def test_a_function_a_rewrite_dropped_is_lost(self):
        found = contracts(
            {"m.py": "def main():\n    return 1\n"},
            {"m.py": "def helper():\n    return 2\n\ndef main():\n    return helper()\n"},
            task="Make main return 1.",
        )
        self.assertIn("python.lost-definition", rules(found))

    def test_only_a_function_the_task_may_take_away_may_go(self):
        now = {"m.py": "def main():\n    return 1\n"}
        before = {"m.py": "def helper():\n    return 2\n\ndef main():\n    return helper()\n"}
        found = contracts(now, before, task="Inline helper into main.", may_lose={"helper", "main"})
        self.assertNotIn("python.lost-definition", rules(found))
        # A task that mentions the name in passing does not take the function away.
        found = contracts(now, before, task="Make main return 1, not the helper value.", may_lose={"main"})
        self.assertIn("python.lost-definition", rules(found))


class PutBackDefinitions(unittest.TestCase):
    """`repair.python-definitions`: top-level functions and classes a rewrite dropped,
    and the task does not name, come back as they were, where they were."""

    BEFORE = textwrap.dedent('''
        import math


        def mean(values):
            """The arithmetic mean."""
            return sum(values) / len(values)


        @staticmethod
        def spread(values):
            return max(values) - min(values)


        class Stats:
            pass


        if __name__ == "__main__":
            print(mean([1, 2]))
        ''').lstrip()

    def put_back(self, now, may_lose=("mean",)):
        with Workspace({"m.py": now}):
            return checks.definitions([["m.py", self.BEFORE]], set(may_lose))

    def test_definitions_a_rewrite_dropped_come_back_where_they_were(self):
        # The whole file rewritten as only the changed function.
        found = self.put_back("def mean(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)")
        self.assertEqual([f["names"] for f in found], [["spread", "Stats"]])
        self.assertEqual(found[0]["content"], textwrap.dedent('''
            def mean(values):
                if not values:
                    return 0.0
                return sum(values) / len(values)


            @staticmethod
            def spread(values):
                return max(values) - min(values)


            class Stats:
                pass
            ''').lstrip())
        # A lost first definition goes before the next one the file kept, and one lost
        # among kept ones after the one before it; the main block stays last.
        found = self.put_back(textwrap.dedent('''
            import math


            def spread(values):
                return 0


            if __name__ == "__main__":
                print(mean([1, 2]))
            ''').lstrip(), ("spread",))
        content = found[0]["content"]
        self.assertEqual(found[0]["names"], ["mean", "Stats"])
        self.assertLess(content.index("def mean"), content.index("def spread"))
        self.assertLess(content.index("def spread"), content.index("class Stats"))
        self.assertLess(content.index("class Stats"), content.index("__main__"))
        compile(content, "m.py", "exec")

    def test_what_the_task_may_take_away_or_the_file_still_binds_stays_as_it_is(self):
        kept = self.BEFORE.replace("@staticmethod\ndef spread(values):\n    return max(values) - min(values)\n", "spread = None\n")
        self.assertEqual(self.put_back(kept), [])
        # "Remove the function spread" may take it away: gone on purpose.
        without = self.BEFORE.replace("@staticmethod\ndef spread(values):\n    return max(values) - min(values)\n", "")
        self.assertEqual(self.put_back(without, ("Remove", "the", "function", "spread")), [])
        # Written in passing ("a spread of values"), it was lost in a rewrite.
        self.assertEqual([f["names"] for f in self.put_back(without, ("mean",))], [["spread"]])
        self.assertEqual(self.put_back("def mean(:\n"), [], "a file that does not parse is left alone")


class UnboundNames(unittest.TestCase):
    def test_a_name_a_rewrite_left_unbound_is_found_with_what_the_file_had(self):
        found = contracts(
            {"m.py": "def area(r):\n    return PI * r * r\n"},
            {"m.py": "PI = 3.14159\n\ndef area(r):\n    return PI * r * r\n"},
        )
        self.assertEqual(rules(found), ["python.unbound-name"])
        self.assertIn("PI = 3.14159", found[0]["message"])

    def test_names_bound_by_imports_arguments_loops_and_builtins_are_bound(self):
        self.assertEqual(contracts({"m.py": '''
            import os
            from math import sqrt as root

            def f(xs, *rest, **named):
                for i, x in enumerate(xs):
                    try:
                        yield root(x) + len(rest) + len(named) + i
                    except ValueError as e:
                        print(e, os.sep)
            '''}, {}), [])

    def test_a_name_already_unbound_before_the_task_is_not_the_teams_doing(self):
        code = "def f():\n    return undefined_thing\n"
        self.assertEqual(contracts({"m.py": code}, {"m.py": code}), [])


class Options(unittest.TestCase):
    def test_an_option_read_that_the_parser_never_adds_is_found(self):
        found = contracts({"cli.py": '''
            import argparse
            parser = argparse.ArgumentParser()
            parser.add_argument("name")
            args = parser.parse_args()
            print(args.name.upper() if args.loud else args.name)
            '''}, {})
        self.assertEqual(rules(found), ["python.unparsed-option"])
        self.assertIn("--loud", found[0]["message"])

    def test_options_the_parser_adds_or_cannot_be_read_are_left_alone(self):
        self.assertEqual(contracts({"cli.py": '''
            import argparse
            parser = argparse.ArgumentParser()
            parser.add_argument("--dry-run", action="store_true")
            args = parser.parse_args()
            print(args.dry_run)
            '''}, {}), [])
        self.assertEqual(contracts({"cli.py": '''
            import argparse
            parser = argparse.ArgumentParser()
            sub = parser.add_subparsers(dest="command")
            args = parser.parse_args()
            print(args.anything)
            '''}, {}), [])


class MainBlock(unittest.TestCase):
    def test_a_main_block_a_rewrite_dropped_is_lost(self):
        found = contracts(
            {"run.py": "def main():\n    print(1)\n"},
            {"run.py": "def main():\n    print(1)\n\nif __name__ == '__main__':\n    main()\n"},
        )
        self.assertEqual(rules(found), ["python.lost-main"])

    def test_a_task_about_the_main_block_may_change_it(self):
        self.assertEqual(contracts(
            {"run.py": "def main():\n    print(1)\n"},
            {"run.py": "def main():\n    print(1)\n\nif __name__ == '__main__':\n    main()\n"},
            task="Remove the if __name__ == '__main__' block.",
        ), [])


class Imports(unittest.TestCase):
    def test_an_import_of_a_name_the_module_no_longer_defines_is_broken(self):
        found = contracts(
            {"geo.py": "def area2(w, h):\n    return w * h\n",
             "app.py": "from geo import area\nprint(area(2, 3))\n"},
            {"geo.py": "def area(w, h):\n    return w * h\n", "app.py": None},
            task="Rename area in geo.py to area2.", whole=True, removes=True,
        )
        self.assertIn("python.broken-import", rules(found))
        self.assertIn("app.py:1", " ".join(f["message"] for f in found))

    def test_imports_of_names_that_are_there_are_fine(self):
        self.assertEqual(contracts(
            {"geo.py": "def area(w, h):\n    return w * h\n",
             "app.py": "from geo import area\nprint(area(2, 3))\n"},
            {"geo.py": "def area(w, h):\n    return w * h\n", "app.py": None},
            whole=True,
        ), [])


class Docstrings(unittest.TestCase):
    """`repair.python-docstrings`: a rewrite that drops a function's or a class's
    docstring gets it back as it was; one turned into comments loses the comments."""

    BEFORE = '''
        def median(values):
            """The middle value.

            >>> median([3, 1, 2])
            2
            """


        class Stack:
            """Last in, first out."""

            def push(self, item):
                """Put item on top."""
                self.items.append(item)
        '''

    def put_back(self, now):
        with Workspace({"m.py": now}):
            return checks.docstrings([["m.py", textwrap.dedent(self.BEFORE)]])

    def test_docstrings_a_rewrite_dropped_are_put_back_where_they_were(self):
        found = self.put_back('''
            def median(values):
                ordered = sorted(values)
                return ordered[len(ordered) // 2]


            class Stack:
                def push(self, item):
                        self.items.append(item)
            ''')
        self.assertEqual([f["names"] for f in found], [["Stack", "Stack.push", "median"]])
        self.assertEqual(found[0]["content"], textwrap.dedent('''
            def median(values):
                """The middle value.

                >>> median([3, 1, 2])
                2
                """
                ordered = sorted(values)
                return ordered[len(ordered) // 2]


            class Stack:
                """Last in, first out."""
                def push(self, item):
                        """Put item on top."""
                        self.items.append(item)
            '''))

    def test_a_docstring_turned_into_comments_is_a_docstring_again(self):
        found = self.put_back('''
            def median(values):
                # Kept by the coder.
                # The middle value.
                # >>> median([3, 1, 2])
                # 2
                return sorted(values)[len(values) // 2]


            class Stack:
                """Last in, first out."""

                def push(self, item):
                    """Put item on top."""
                    self.items.append(item)
            ''')
        self.assertEqual([f["names"] for f in found], [["median"]])
        self.assertIn('    # Kept by the coder.\n    """The middle value.\n', found[0]["content"])
        self.assertNotIn("# The middle value.", found[0]["content"])

    def test_docstrings_kept_changed_or_never_there_are_left_alone(self):
        # Kept, reworded, a definition new to the file, a file that does not parse.
        self.assertEqual(self.put_back(self.BEFORE), [])
        self.assertEqual(self.put_back('''
            def median(values):
                """The middle value of a sorted copy."""
                return sorted(values)[len(values) // 2]


            def mode(values):
                return max(values, key=values.count)
            '''), [])
        self.assertEqual(self.put_back("def median(values):\n    return (\n"), [])
        # A body on the header's line has no line to put a docstring on.
        self.assertEqual(self.put_back("def median(values): return 0\n"), [])
        with Workspace({"new.py": "def f():\n    return 1\n"}):
            self.assertEqual(checks.docstrings([["new.py", None]]), [])


class Disabled(unittest.TestCase):
    def test_a_disabled_rule_does_not_run(self):
        files = {"m.py": "def total(xs) -> int:\n    print(sum(xs))\n"}
        self.assertEqual(contracts(files, {}, disabled={"python.unkept-return"}), [])


if __name__ == "__main__":
    unittest.main()
