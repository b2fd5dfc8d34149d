"""The one reader of Python definitions (definitions.py), on general cases, and the
contract that lets Conclave join it ahead of the programs that use it. Run:
`python3 -m unittest src/checks/python/test_definitions.py` (cargo test does)."""

import ast
import os
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import definitions  # noqa: E402

# The programs Conclave runs with definitions.py joined ahead (checks::python_program).
PROGRAMS = [
    os.path.join(HERE, "checks.py"),
    os.path.join(HERE, "..", "..", "team", "acceptance_runner.py"),
]


def tree(text):
    return ast.parse(textwrap.dedent(text))


class Project:
    """A temp directory holding files, by relative path."""

    def __init__(self, files):
        self.files = files

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory()
        for path, text in self.files.items():
            full = os.path.join(self.dir.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        return self.dir.name

    def __exit__(self, *_):
        self.dir.cleanup()


class WhatAModuleDefines(unittest.TestCase):
    MODULE = """
        import os
        from json import loads as read
        LIMIT = 3
        size: int = 4
        a, b = 1, 2
        if os.name == "nt":
            def native():
                pass
        class Cart:
            def add(self, item):
                total = item
                return total
        async def fetch(url):
            return url
    """

    def test_what_it_defines_is_its_own_top_level_functions_classes_and_variables(self):
        self.assertEqual(
            definitions.defined_at_top(tree(self.MODULE)),
            {"LIMIT", "size", "Cart", "fetch"},
        )

    def test_what_it_binds_takes_in_imports_and_conditional_definitions(self):
        bound = definitions.bound_at_top(tree(self.MODULE))
        for name in ("os", "read", "LIMIT", "native", "Cart", "fetch", "a", "b"):
            self.assertIn(name, bound)
        self.assertNotIn("loads", bound)

    def test_what_it_binds_is_unknown_under_a_star_import_or_a_module_getattr(self):
        self.assertIsNone(definitions.bound_at_top(tree("from os.path import *\n")))
        self.assertIsNone(definitions.bound_at_top(tree("def __getattr__(name):\n    return 1\n")))
        # A method called __getattr__ is no module __getattr__.
        self.assertEqual(
            definitions.bound_at_top(tree("class C:\n    def __getattr__(self, n):\n        return 1\n")),
            {"C", "__getattr__"},
        )

    def test_functions_are_named_with_their_class(self):
        self.assertEqual(sorted(definitions.functions(tree(self.MODULE))), ["Cart.add", "fetch"])


class UnboundNames(unittest.TestCase):
    def test_a_name_read_and_bound_nowhere_is_found_with_its_first_line(self):
        code = """
            import math
            def area(r):
                return math.pi * r * r * scale
            print(area(2), scale)
        """
        self.assertEqual(definitions.unbound(tree(code)), {"scale": 4})

    def test_bindings_of_every_kind_count(self):
        code = """
            import os.path as p
            from json import dumps
            def f(x, *rest, key=None, **more):
                global counter
                try:
                    y = [z for z in rest]
                except ValueError as error:
                    return error
                with open(x) as handle:
                    return handle, y, key, more, counter, p, dumps, __file__
            match 3:
                case [first, *others]:
                    print(first, others)
                case {"k": value, **extra}:
                    print(value, extra)
        """
        self.assertEqual(definitions.unbound(tree(code)), {})

    def test_given_names_count_as_bound_and_a_star_import_hides_everything(self):
        self.assertEqual(definitions.unbound(tree("print(os.sep)\n"), given={"os"}), {})
        self.assertEqual(definitions.unbound(tree("from m import *\nprint(anything)\n")), {})


class UnwrittenFunctions(unittest.TestCase):
    def test_a_function_with_only_placeholders_is_unwritten(self):
        code = '''
            def documented(x):
                """Return x doubled."""
            def passing():
                pass
            def ellipsis():
                ...
            def raising():
                raise NotImplementedError("later")
            def written(x):
                """Return x doubled."""
                return x * 2
            class Shape:
                def area(self):
                    raise NotImplementedError
        '''
        self.assertEqual(
            [f.name for f in definitions.unwritten_functions(tree(code))],
            ["documented", "passing", "ellipsis", "raising", "area"],
        )

    def test_other_errors_raised_are_a_body(self):
        code = "def check(x):\n    raise ValueError(x)\n"
        self.assertEqual(definitions.unwritten_functions(tree(code)), [])


class TheProject(unittest.TestCase):
    FILES = {
        "app.py": "def main():\n    pass\n",
        "pkg/__init__.py": "VERSION = 1\n",
        "pkg/util.py": "def helper():\n    return 1\n",
        "pkg/deep/er/est.py": "X = 1\n",
        "pkg/deep/er/than/that.py": "Y = 1\n",
        ".hidden/secret.py": "Z = 1\n",
        "__pycache__/cached.py": "",
        "venv/lib/site.py": "",
        "node_modules/x/y.py": "",
        "broken.py": "def (:\n",
        "notes.txt": "def not_python():\n",
    }

    def test_its_files_are_three_folders_deep_and_its_own(self):
        with Project(self.FILES) as root:
            self.assertEqual(
                definitions.project_files(root),
                ["app.py", "broken.py", "pkg/__init__.py", "pkg/deep/er/est.py", "pkg/util.py"],
            )

    def test_its_modules_are_named_by_path_with_what_each_defines(self):
        with Project(self.FILES) as root:
            modules = dict(definitions.project_modules(root, leave_out={os.path.join(root, "app.py")}))
        self.assertEqual(
            modules,
            {"pkg": {"VERSION"}, "pkg.util": {"helper"}, "pkg.deep.er.est": {"X"}},
        )

    def test_an_import_reaches_the_root_first_then_the_importers_folder(self):
        with Project({"mathx.py": "", "pkg/mathx.py": "", "pkg/only.py": "", "pkg/sub/__init__.py": ""}) as root:
            self.assertEqual(definitions.module_file("mathx", "pkg/use.py", root), "mathx.py")
            self.assertEqual(definitions.module_file("only", "pkg/use.py", root), os.path.join("pkg", "only.py"))
            self.assertEqual(definitions.module_file("pkg.sub", "use.py", root), os.path.join("pkg", "sub", "__init__.py"))
            self.assertIsNone(definitions.module_file("missing", "use.py", root))


class JoinedAheadOfThePrograms(unittest.TestCase):
    """Conclave runs each program with definitions.py joined ahead and the program's
    `from definitions import …` line left out: the program must take what it uses from
    that line alone, unrenamed, and define none of those names again."""

    def test_each_program_imports_in_one_plain_line_and_shadows_nothing(self):
        provided = {
            node.name for node in ast.parse(open(definitions.__file__).read()).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        }
        for path in PROGRAMS:
            program = ast.parse(open(path).read())
            imports = [n for n in program.body if isinstance(n, ast.ImportFrom) and n.module == "definitions"]
            self.assertEqual(len(imports), 1, path)
            self.assertEqual(imports[0].end_lineno, imports[0].lineno, path)
            self.assertTrue(all(a.asname is None for a in imports[0].names), path)
            taken = {a.name for a in imports[0].names}
            self.assertLessEqual(taken, provided, path)
            own = set()
            for node in ast.walk(program):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    own.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    own.add(node.id)
            self.assertEqual(own & provided, set(), f"{path} redefines what definitions.py provides")


if __name__ == "__main__":
    unittest.main()
