# Runs an acceptance test the team wrote (see acceptance.rs), in the workspace.
#
#   python3 -c RUNNER TEST [TASK_FILE ORIGINALS_DIR (first|rewritten) DISABLED_JSON INTENT_JSON SECOND_DIR]
#
# INTENT_JSON is the task as the checks read it (`checks::intent::Intent`): the words it
# mentions, the names of code and the flags it gives, and whether it is about a program
# or about rounding. The task is read there once, for every rule; this runner reads no
# English of its own (TASK_FILE only for the examples the task gives). What the
# project's modules define is read by src/checks/python/definitions.py, joined ahead of
# this program when Conclave runs it.
#
# Exit 0: passed; 1: the code failed it; 3: the test itself is broken.
#
# What it finds wrong with a test, and what it mends in one, are rules with ids
# (docs/checks.md): after the line that says it, a line `::rule ID` names the rule, and
# a rule whose id is in DISABLED_JSON (`verify.disabled`) does not run. The rules are the
# lists at the end of this file (`BEFORE_THE_RUN` …), asked in order by `main`.
#
# Every `assert` is judged on its own. One that fails is a failure of the code, except
# when it only exercises functions the task does not name and the code as it was before
# the task (ORIGINALS_DIR, first on sys.path) fails it too: then the test expected
# something of the rest of the code that the task never asked for (for "make mean([])
# return 0.0", an assert `spread([]) == 0.0`), and the assert is ignored, saying so. A regression in the rest of the code still fails.
#
# SECOND_DIR, when given, holds a second solution of the task, written from the task
# alone by a model that saw neither the team's code nor this test, laid out as the
# project is. A failing comparison it fails the same way, value for value, is disputed:
# two solutions against one test (`acceptance.disputed-assert`). Without SECOND_DIR, a
# run whose failing asserts such a solution could settle or pass ends with a line
# `::disputable` (whether or not the rule is on: the fix loop tries the solution too).
import ast
import copy
import inspect
import io
import json
import os
import re
import sys
import tokenize
import traceback

from definitions import project_files, project_modules, read_tree, unbound, unwritten_functions

TEST = os.path.abspath(sys.argv[1])
TASK_FILE = sys.argv[2] if len(sys.argv) > 2 else ""
ORIGINALS = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else ""
# The team's second test for the task: its long hand-written values are let be.
REWRITTEN = len(sys.argv) > 4 and sys.argv[4] == "rewritten"
DISABLED = set(json.loads(sys.argv[5])) if len(sys.argv) > 5 and sys.argv[5] else set()
INTENT = json.loads(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] else {}
SECOND = os.path.abspath(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] else ""
ROOT = os.getcwd()
BROKEN = 3
# How a passed run says the code gave the task's own examples (acceptance.rs reads it).
EXAMPLES_GIVEN = "the task's own examples the code gives:"


def on(rule):
    """Whether the rule `rule` runs."""
    return rule not in DISABLED


def fired(rule):
    """Names the rule behind the line printed just before."""
    print(f"::rule {rule}")


def broken(rule, message=None, otherwise=None):
    """The test is broken itself, as the rule `rule` found: it says nothing of the code.
    With the rule switched off the run ends with `otherwise` instead (1: the code failed
    the test, 0: it passed); a rule with no `otherwise` cannot be switched off."""
    if otherwise is not None and not on(rule):
        sys.exit(otherwise)
    if message:
        print(message)
    fired(rule)
    sys.exit(BROKEN)

sys.path.insert(0, ROOT)
# The task's text, read here only for the examples it gives (doctest's `>>>` lines).
TASK_TEXT = open(TASK_FILE).read() if TASK_FILE else ""
# Every identifier the task writes (the intent's `mentions`).
TASK_WORDS = set(INTENT.get("mentions", []))
# The words the task gives as names of code (the intent's `codeNames`).
TASK_CODE_NAMES = set(INTENT.get("codeNames", []))
# The command-line flags the task asks for (`--shout`; none when it removes code).
TASK_FLAGS = [name for name in INTENT.get("names", []) if name.startswith("--")]


def under(path, directory):
    return os.path.abspath(path).startswith(directory + os.sep)


def in_workspace_code(filename):
    """A file of the workspace's own code: not the test, not Conclave's files."""
    return (
        not filename.startswith("<")
        and os.path.abspath(filename) != TEST
        and under(filename, ROOT)
        and os.sep + ".conclave" + os.sep not in os.path.abspath(filename)
    )


def raised_in_code(error):
    """Whether `error` came from the workspace's code rather than the test's own mistake."""
    if lacks_task_name(error):
        return True
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<")]
    if isinstance(error, SyntaxError):
        return bool(error.filename) and in_workspace_code(error.filename)
    if isinstance(error, ImportError):
        # Only an import the code itself makes (`from string import string` atop the
        # code); the test's own import of a name that is not there is the test's.
        return bool(frames) and in_workspace_code(frames[-1].filename)
    return any(in_workspace_code(f.filename) for f in frames)


def missing_name(error):
    """(module, name) when `error` says a module lacks a name, else None."""
    text = str(error)
    found = re.search(r"cannot import name '(\w+)' from '([\w.]+)'", text) or re.search(
        r"module '([\w.]+)' has no attribute '(\w+)'", text
    )
    if not found or not isinstance(error, (ImportError, AttributeError)):
        return None
    name, module = found.groups() if isinstance(error, ImportError) else found.groups()[::-1]
    return module, name


def lacks_task_name(error):
    """A module the task names lacks a function the task names: the code's failure, not
    the test's (`from solution import fizzbuzz` when solution.py lost it)."""
    missing = missing_name(error)
    if not missing:
        return False
    module, name = missing
    return name in TASK_CODE_NAMES and module.split(".")[-1] in TASK_WORDS


def invented_names(errors):
    """What the test used of a project module that neither the task names nor the code
    defines (`hello.hello()` for "a program that prints hello world")."""
    project = {module for module, _ in modules_of_the_project()}
    found = []
    for error in errors:
        missing = missing_name(error)
        if missing and missing[0] in project and f"{missing[0]}.{missing[1]}" not in found:
            found.append(f"{missing[0]}.{missing[1]}")
    return found


def equal(a, b):
    """`a == b`, a float's ordinary error let through against a whole number
    (`f_to_c(33.8) == 1` where the code gives 0.9999999999999984), as `WrittenFloats`
    lets it through against a float written out."""
    return a == b or ({type(a), type(b)} == {int, float} and same_float(a, b, 0))


# The comparisons an assert's two sides are shown for when it fails (pytest's way):
# "the left side is 6, the right side 26" says more of what the code did than an
# `AssertionError` alone.
COMPARED = {
    "Eq": equal, "NotEq": lambda a, b: not equal(a, b), "Lt": lambda a, b: a < b,
    "LtE": lambda a, b: a <= b, "Gt": lambda a, b: a > b, "GtE": lambda a, b: a >= b,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
    "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b,
}
# How much of a side's value is shown.
SHOWN_CHARS = 200


def shown(value):
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


class Outcomes:
    """What became of each assert (by line) in one run of the test."""

    def __init__(self):
        self.passed = set()
        self.failed = {}  # line -> ("assert" | "code" | "broken", text)
        self.errors = {}  # line -> the exception
        self.sides = {}  # line -> the two sides of its comparison, as shown, last run

    def ok(self, line):
        self.passed.add(line)

    def compare(self, line, op, left, right):
        """The comparison of an assert, its sides kept for the report."""
        self.sides[line] = (shown(left), shown(right))
        return COMPARED[op](left, right)

    def fail(self, line, error):
        if line in self.failed:
            return
        if isinstance(error, AssertionError):
            kind = "assert"
        elif raised_in_code(error):
            kind = "code"
        else:
            kind = "broken"
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        self.failed[line] = (kind, text)
        self.errors[line] = error


class SoftAsserts(ast.NodeTransformer):
    """`assert x` becomes: try: assert x; ok(line) except Exception as e: fail(line, e)."""

    def visit_Assert(self, node):
        line = node.lineno
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]).__name__ in COMPARED:
            # A new node: the assert as written stays what the rules read.
            compare = ast.Call(
                ast.Attribute(ast.Name("_conclave_outcomes", ast.Load()), "compare", ast.Load()),
                [ast.Constant(line), ast.Constant(type(test.ops[0]).__name__), test.left, test.comparators[0]],
                [],
            )
            node = ast.copy_location(ast.Assert(test=ast.copy_location(compare, test), msg=node.msg), node)
        ok = ast.parse(f"_conclave_outcomes.ok({line})").body[0]
        fail = ast.parse(f"_conclave_outcomes.fail({line}, _conclave_error)").body[0]
        for new in (ok, fail):
            for n in ast.walk(new):
                if hasattr(n, "lineno"):
                    n.lineno = n.end_lineno = line
                    n.col_offset = n.end_col_offset = 0
        handler = ast.ExceptHandler(
            type=ast.Name("Exception", ast.Load()), name="_conclave_error", body=[fail]
        )
        guarded = ast.Try(body=[node, ok], handlers=[handler], orelse=[], finalbody=[])
        return ast.fix_missing_locations(ast.copy_location(guarded, node))


# unittest's checks, as the plain asserts they stand for: `self.assertEqual(a, b)` is
# `assert a == b`, judged like any other assert.
COMPARISONS = {
    "assertEqual": ast.Eq, "assertEquals": ast.Eq, "assertNotEqual": ast.NotEq,
    "assertIn": ast.In, "assertNotIn": ast.NotIn, "assertIs": ast.Is, "assertIsNot": ast.IsNot,
    "assertGreater": ast.Gt, "assertGreaterEqual": ast.GtE, "assertLess": ast.Lt,
    "assertLessEqual": ast.LtE,
}


class UnittestAsserts(ast.NodeTransformer):
    """`self.assertEqual(a, b)` and its kin, as statements, become `assert` statements."""

    def visit_Expr(self, node):
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "self"
            and (not call.keywords or call.func.attr == "assertAlmostEqual")
        ):
            return node
        name, args = call.func.attr, call.args
        if name in COMPARISONS and len(args) >= 2:
            test = ast.Compare(args[0], [COMPARISONS[name]()], [args[1]])
        elif name == "assertTrue" and args:
            test = args[0]
        elif name == "assertFalse" and args:
            test = ast.UnaryOp(ast.Not(), args[0])
        elif name in ("assertAlmostEqual", "assertNotAlmostEqual") and len(args) >= 2:
            # unittest's own meaning: round(a - b, places) == 0, places 7 unless given.
            places = args[2] if len(args) > 2 else next(
                (k.value for k in call.keywords if k.arg == "places"), ast.Constant(7)
            )
            difference = ast.BinOp(args[0], ast.Sub(), args[1])
            rounded = ast.Call(ast.Name("round", ast.Load()), [difference, places], [])
            op = ast.Eq() if name == "assertAlmostEqual" else ast.NotEq()
            test = ast.Compare(rounded, [op], [ast.Constant(0)])
        elif name in ("assertIsNone", "assertIsNotNone") and args:
            op = ast.Is() if name == "assertIsNone" else ast.IsNot()
            test = ast.Compare(args[0], [op], [ast.Constant(None)])
        else:
            return node
        return ast.fix_missing_locations(ast.copy_location(ast.Assert(test=test, msg=None), node))




def written_decimals(node, source):
    """The digits after the point of a float written out in the test (`-17.78`: 2)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if not (isinstance(node, ast.Constant) and type(node.value) is float):
        return None
    text = ast.get_source_segment(source, node) or repr(node.value)
    if "e" in text.lower() or "." not in text:
        return None
    return len(text.split(".", 1)[1])


class WrittenFloats(ast.NodeTransformer):
    """Values compared as the person who wrote the test meant them. What a program
    printed is compared without surrounding whitespace. `f_to_c(0) == -17.78` holds for
    -17.777…: a float written out in the test is compared at the precision it is
    written with, so that a test that writes the value as a person would does not fail
    right code. Ordinary float error (0.1 + 0.2 == 0.3) is let through too. A task
    about rounding keeps the digits exact."""

    def __init__(self, source, rounding_task):
        self.source = source
        self.rounding_task = rounding_task

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            return node
        left, right = node.left, node.comparators[0]
        if printed(left) or printed(right):
            # `result.stdout == "hello world"`: what a program printed, compared without
            # the line break print() ends it with, which would fail right code.
            call = ast.Call(ast.Name("_conclave_same_text", ast.Load()), [left, right], [])
            result = call if isinstance(node.ops[0], ast.Eq) else ast.UnaryOp(ast.Not(), call)
            return ast.copy_location(result, node)
        digits = written_decimals(right, self.source)
        if digits is None:
            digits = written_decimals(left, self.source)
        if digits is None:
            return node
        if self.rounding_task:
            digits = -1
        call = ast.Call(ast.Name("_conclave_same_float", ast.Load()), [left, right, ast.Constant(digits)], [])
        result = call if isinstance(node.ops[0], ast.Eq) else ast.UnaryOp(ast.Not(), call)
        return ast.copy_location(result, node)


def printed(node):
    """Whether `node` is what a program printed: `result.stdout`, `proc.stderr`."""
    return isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")


def same_text(a, b):
    if isinstance(a, bytes):
        a = a.decode(errors="replace")
    if isinstance(b, bytes):
        b = b.decode(errors="replace")
    if isinstance(a, str) and isinstance(b, str):
        return a.replace("\r\n", "\n").strip() == b.replace("\r\n", "\n").strip()
    return a == b


def same_float(a, b, digits):
    import math

    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    if not numbers:
        return a == b
    if a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
        return True
    # Written with two or more decimals, the value was rounded by whoever wrote it.
    return digits >= 2 and abs(a - b) <= 0.5 * 10 ** -digits + 1e-12


def execute(tree, outcomes):
    import json, math, subprocess, unittest  # noqa: E401 (a test may use them unimported)

    # A test's own `unittest.main()` would look for tests in this runner, find none and
    # exit: its TestCase classes are run below instead.
    unittest.main = lambda *args, **kwargs: None
    # The test runs as if alone: code it calls that parses the command line (a
    # `main()`, say) must not see the runner's own arguments.
    sys.argv = [TEST]
    namespace = {
        "__name__": "__main__",
        "__file__": TEST,
        "_conclave_outcomes": outcomes,
        "_conclave_same_float": same_float,
        "_conclave_same_text": same_text,
        "sys": sys, "os": os, "re": re, "json": json, "math": math, "subprocess": subprocess,
    }
    exec(compile(tree, TEST, "exec"), namespace)
    # pytest style: test functions the script defines but never calls are called here
    # (`test_…` functions, or a check function defined and never called), or the
    # test would run no assert at all.
    uncalled = uncalled_functions(tree)
    for name, value in list(namespace.items()):
        if (name.startswith("test") or name in uncalled) and callable(value) and getattr(value, "__module__", None) == "__main__":
            if not isinstance(value, type):
                value()
    # unittest style: each test method of each TestCase the script defines.
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, unittest.TestCase) and value.__module__ == "__main__":
            for method in sorted(m for m in dir(value) if m.startswith("test")):
                case = value(method)
                case.setUp()
                try:
                    getattr(case, method)()
                finally:
                    case.tearDown()
    return namespace


def uncalled_functions(tree):
    """Functions the test defines at its top level, never mentions again, and can call
    without arguments: its checks, which it forgot to run."""
    mentioned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and node.name not in mentioned
        and len(node.args.args) + len(node.args.posonlyargs) <= len(node.args.defaults)
        and not node.args.kwonlyargs
    }


class SameInterpreter(ast.NodeTransformer):
    """`subprocess.run(["python", "hello.py"])` runs with the interpreter running the
    test: a machine may have no `python`, or another one."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if starts_program(node.func) and node.args and isinstance(node.args[0], ast.List):
            first = node.args[0].elts[:1]
            if first and isinstance(first[0], ast.Constant) and first[0].value in ("python", "python3"):
                executable = ast.Attribute(value=ast.Name(id="sys", ctx=ast.Load()), attr="executable", ctx=ast.Load())
                node.args[0].elts[0] = ast.copy_location(executable, first[0])
        return node


def without_own_said(tree):
    """The test without its own `said` when it redefines the one it was given: its own
    may keep punctuation or line breaks, failing "Hello, World!" against "hello world".
    Returns whether there was one."""
    given = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "said"]
    if len(given) < 2:
        return False
    tree.body = [n for n in tree.body if not any(n is own for own in given[1:])]
    return True


def parse_test(text):
    """The test's syntax tree, and a note when only its complete part could be read: an
    answer cut off by the model's token limit ends in an unfinished line (say, an
    unterminated string), and the asserts before it still check."""
    try:
        return ast.parse(text, TEST), None
    except SyntaxError as error:
        lines = text.splitlines()
        if error.lineno is None or error.lineno < len(lines) - 2:
            raise
        for end in range(min(error.lineno, len(lines)) - 1, 0, -1):
            try:
                tree = ast.parse("\n".join(lines[:end]), TEST)
            except SyntaxError:
                continue
            return tree, f"cut off at line {error.lineno} (the end of the model's answer): the lines before it ran"
        raise


def call_name(call):
    """(owner, name) of a call: `f(x)` is (None, "f"), `m.f(x)` is ("m", "f"); None for
    any other callee."""
    if isinstance(call.func, ast.Name):
        return None, call.func.id
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return call.func.value.id, call.func.attr
    return None


def called(node):
    """(owner, name) of each call in `node` (see `call_name`)."""
    return {call_name(n) for n in ast.walk(node) if isinstance(n, ast.Call) and call_name(n)}


def source_file(namespace, owner, name):
    target = namespace.get(name) if owner is None else getattr(namespace.get(owner), name, None)
    try:
        return inspect.getfile(target)
    except (TypeError, OSError):
        return None


def project_calls(node, namespace, directory):
    """The calls in `node` to functions defined under `directory`, as (name, file)."""
    found = []
    for owner, name in called(node):
        file = source_file(namespace, owner, name)
        if defined_under(file, directory):
            found.append((name, file))
    return found


def defined_under(file, directory):
    """Whether code from `file` is the project's, under `directory`: not the test's, not
    the runner's own helpers (`<string>`, run with `python3 -c`)."""
    return bool(file) and not file.startswith("<") and under(file, directory) and os.path.abspath(file) != TEST




def imports_project_module(tree):
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            path = os.path.join(ROOT, *name.split("."))
            if os.path.isfile(path + ".py") or os.path.isdir(path):
                return True
    return False


def program_instead_of_function(tree):
    """The function a task is about, when the test only runs a program instead of
    calling it: what a program prints says little of the function the task is about."""
    if INTENT.get("aboutProgram"):
        return None
    if imports_project_module(tree) or not runs_program(tree):
        return None
    for module, names in modules_of_the_project():
        named = sorted(n for n in names & TASK_WORDS if not n.isupper())
        if named and module.split(".")[-1] in TASK_WORDS:
            return f"{named[0]} (from {module})"
    return None


def runs_project_code(tree):
    """Whether the test imports a module of the project or runs a program: a test that
    does neither checks only itself (asserts on a helper the test defined, say)."""
    return imports_project_module(tree) or runs_program(tree)


def starts_program(func):
    """Whether a call to `func` runs a program: subprocess, os.system, runpy."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "subprocess" or (func.value.id == "os" and func.attr in ("system", "popen")):
            return True
    if isinstance(func, ast.Name) and func.id in ("run", "check_output", "call", "Popen", "system", "popen", "runpy"):
        return True
    return isinstance(func, ast.Attribute) and func.attr in ("run_path", "run_module")


LONG_ITEMS = 8


def long_expected_values(tree, source):
    """Asserts that compare with a long value written out by hand, {line: source}: a
    list of more than LONG_ITEMS items, or text of more than LONG_ITEMS lines. A small
    model often gets one item of such a value wrong (`fizzbuzz(9) == ['1', '2', 'Fizz',
    …, '9']`), and the assert then fails right code."""
    found = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
            continue
        for side in [node.test.left, *node.test.comparators]:
            if isinstance(side, ast.Call) and len(side.args) == 1:  # said("…")
                side = side.args[0]
            items = len(side.elts) if isinstance(side, (ast.List, ast.Tuple, ast.Set)) else 0
            if isinstance(side, ast.Dict):
                items = len(side.keys)
            if isinstance(side, ast.Constant) and isinstance(side.value, str):
                items = side.value.count("\n") + 1
            if items > LONG_ITEMS:
                shown = ast.get_source_segment(source, node) or f"line {node.lineno}"
                found[node.lineno] = shown if len(shown) <= 100 else shown[:97] + "..."
                break
    return found


def defined_in_project(namespace):
    """The functions and classes of the project's modules the test reached (all of a
    module's, also when the test imported only one of them)."""
    def in_project(value):
        try:
            file = inspect.getfile(value)
        except (TypeError, OSError):
            return False
        return not file.startswith("<") and under(file, ROOT) and os.path.abspath(file) != TEST

    modules = set()
    for value in list(namespace.values()):
        if inspect.ismodule(value) and in_project(value):
            modules.add(value)
        elif (inspect.isfunction(value) or inspect.isclass(value)) and in_project(value):
            module = sys.modules.get(value.__module__)
            if module is not None:
                modules.add(module)
    names = set()
    for module in modules:
        for member in vars(module).values():
            if (inspect.isfunction(member) or inspect.isclass(member)) and member.__module__ == module.__name__:
                names.add(member.__name__)
    return names


def beside_the_task(tree, namespace, passed, asserts):
    """Why a test that passed still checked nothing the task asks for, or None: a test
    of some other function (a helper the plan invented, say) can pass while what the task
    asks for is missing or broken."""
    source = open(TEST).read()
    for flag in TASK_FLAGS:
        if flag not in source or not runs_program(tree):
            return f"the task asks for {flag}, a command-line flag, but the test never runs the program with it"
    named = defined_in_project(namespace) & TASK_WORDS
    if not named:
        return None
    for line in passed:
        calls = project_calls(asserts[line], namespace, ROOT)
        if not calls or any(name in named for name, _ in calls):
            return None
    checked = sorted({name for line in passed for name, _ in project_calls(asserts[line], namespace, ROOT)})
    return (
        f"the test checks only {', '.join(checked)}, which the task does not name; "
        f"it must check {', '.join(sorted(named))}"
    )


# What `execute` binds for every test (a test may use them unimported).
GIVEN_NAMES = {"sys", "os", "re", "json", "math", "subprocess", "unittest"}


def modules_of_the_project(cache=[]):
    """(module name, what it defines at its top level) of the project's Python files,
    read once: the test has not run yet when it is asked."""
    if not cache:
        cache.extend(project_modules(ROOT, leave_out={TEST}))
    return cache


def import_project_names(tree):
    """Imports what the test uses without importing it: a module of the project
    (`stats.mean(...)`), or a name one module of the project defines
    (`assert fizzbuzz(3) == ...` with no import): as written, such a test runs no code
    of the project. Returns a line saying so for each."""
    missing = sorted(unbound(tree, GIVEN_NAMES))
    if not missing:
        return []
    modules = modules_of_the_project()
    notes = []
    for name in missing:
        if name in (module for module, _ in modules):
            tree.body.insert(0, ast.Import(names=[ast.alias(name=name)]))
            notes.append(f"imported {name}: the test used the module without importing it")
            continue
        owners = [module for module, names in modules if name in names]
        if len(owners) > 1:
            owners = [m for m in owners if m.split(".")[-1] in TASK_WORDS]
        if len(owners) != 1:
            continue
        tree.body.insert(0, ast.ImportFrom(module=owners[0], names=[ast.alias(name=name)], level=0))
        notes.append(f"imported {name} from {owners[0]}: the test used it without importing it")
    ast.fix_missing_locations(tree)
    return notes


def comments_by_line(source):
    """{line: the text of its comment}, for the lines of `source` that end in one. A test
    cut off by the model's token limit gives the comments of its readable part."""
    found = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = token.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


OPERATIONS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
              ast.Pow: lambda a, b: a ** b}


def numeric_value(node):
    """The value of `node` when it is numbers and arithmetic alone (`-2.5`, `2*1 + 4*3`),
    else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = numeric_value(node.operand)
        return None if v is None else -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATIONS:
        a, b = numeric_value(node.left), numeric_value(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > 10**6):
            return None  # too large to be a test's expected value
        try:
            return OPERATIONS[type(node.op)](a, b)
        except (ArithmeticError, TypeError):
            return None
    return None


def arithmetic_value(text):
    """The value of `text` when it is arithmetic on numbers alone, with at least one
    operation (`2*1 + 4*3`, `(3 + 4) / 2`), else None. A lone number works nothing out."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    return numeric_value(node) if isinstance(node, ast.BinOp) else None


def number_of(node):
    """The number a literal (`26`, `-2.5`) stands for, else None."""
    inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else node
    return numeric_value(node) if isinstance(inner, ast.Constant) else None


def same_number(a, b):
    return a == b or (isinstance(a, float) or isinstance(b, float)) and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1)


def own_arithmetic(tree, source):
    """Expected values the test worked out beside its assert and then wrote down wrong:
    `assert total(xs) == 10  # 2*1 + 4*3 = 10`. The arithmetic in the comment is what
    the test meant, and Python works it out without a slip; the number written after it
    is the model's own sum. The expected value becomes the arithmetic. Returns a line
    saying so for each."""
    comments = comments_by_line(source)
    notes = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
                and len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.Eq)):
            continue
        comment = comments.get(node.end_lineno)
        if not comment:
            continue
        compare = node.test
        sides = [("left", compare.left), ("right", compare.comparators[0])]
        written = [(where, n, number_of(n)) for where, n in sides if number_of(n) is not None]
        if len(written) != 1:
            continue
        where, literal, expected = written[0]
        # "E = N" where N is the number the assert has, or "E" alone.
        parts = [p.strip() for p in re.split(r"(?<![=!<>])=(?!=)", comment)]
        if len(parts) > 1 and not (len(parts) == 2 and re.fullmatch(r"-?\d+(\.\d+)?", parts[1])
                                   and same_number(float(parts[1]), expected)):
            continue
        worked = arithmetic_value(parts[0])
        if worked is None or same_number(worked, expected):
            continue
        mended = ast.copy_location(ast.parse(parts[0], mode="eval").body, literal)
        if where == "left":
            compare.left = mended
        else:
            compare.comparators[0] = mended
        notes.append(f"line {node.lineno}: the expected value {ast.unparse(literal)} is not what the "
                     f"arithmetic written beside it gives ({parts[0]} is {worked!r}): the arithmetic is taken")
    ast.fix_missing_locations(tree)
    return notes

def runs_program(tree):
    """Whether the test runs a program (subprocess, os.system, runpy)."""
    return any(isinstance(node, ast.Call) and starts_program(node.func) for node in ast.walk(tree))


def say_invented(errors):
    invented = invented_names(errors)
    if invented:
        shown = ", ".join(f"`{name}`" for name in invented)
        print(
            f"the test uses {shown}, which the task does not name and the code does not "
            "define: test only what the task asks for"
        )


def task_examples():
    """The examples the task itself gives, as [(call source, expected value)]: doctest
    examples (`>>> f(2)` and the value on the next line) in the task's text, and in the
    docstrings of the functions the task found unwritten. A docstring of code that was
    already written is not taken: the task may be there to change what it says. Only an
    example whose value is a Python literal, of a call to a function the project
    defines, counts."""
    texts = [TASK_TEXT]
    if ORIGINALS:
        for path in project_files(ORIGINALS):
            tree = read_tree(os.path.join(ORIGINALS, path))
            if tree is not None:
                texts.extend(ast.get_docstring(f) or "" for f in unwritten_functions(tree))
    defined = {name for _, names in modules_of_the_project() for name in names}
    examples = []
    for text in texts:
        for example in doctest_examples(text):
            if example.exc_msg or not example.want.strip():
                continue
            try:
                call = ast.parse(example.source.strip(), mode="eval").body
                expected = ast.literal_eval(example.want.strip())
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
            names = {n.func.id for n in ast.walk(call) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            if not isinstance(call, ast.Call) or not names or not names <= defined:
                continue
            if (example.source.strip(), expected) not in examples:
                examples.append((example.source.strip(), expected))
    return examples


def doctest_examples(text):
    """The doctest examples in `text`. doctest rejects a whole text for one malformed
    example (a line less indented than its `>>>`, often an escape such as `\\n` that a
    docstring turned into a real line break): then each `>>>` block is read alone, so
    that a bad example costs only itself."""
    import doctest

    parser = doctest.DocTestParser()
    try:
        return parser.get_examples(text)
    except ValueError:
        pass
    blocks, block = [], []
    for line in text.splitlines():
        if line.lstrip().startswith(">>>") and block:
            blocks.append("\n".join(block))
            block = []
        block.append(line)
    blocks.append("\n".join(block))
    found = []
    for block in blocks:
        try:
            found.extend(parser.get_examples(block))
        except ValueError:
            continue
    return found


def check_examples(examples):
    """Runs the task's own examples on the code; the lines of those it does not give."""
    modules = modules_of_the_project()
    lines = []
    for name in sorted({n.func.id for source, _ in examples for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}):
        owners = [module for module, names in modules if name in names]
        if len(owners) > 1:
            owners = [m for m in owners if m.split(".")[-1] in TASK_WORDS] or owners[:1]
        if owners:
            lines.append(f"from {owners[0]} import {name}")
    start = len(lines) + 1
    for source, expected in examples:
        lines.append(f"assert ({source}) == {expected!r}")
    tree = ast.parse("\n".join(lines) + "\n")
    tree = ast.fix_missing_locations(WrittenFloats("\n".join(lines), False).visit(tree))
    tree = SoftAsserts().visit(tree)
    outcomes = Outcomes()
    try:
        namespace = execute(tree, outcomes)
    except BaseException:
        return [f"`{source}` should give {expected!r}: {traceback.format_exc().strip().splitlines()[-1]}" for source, expected in examples]
    wrong = []
    for number, (source, expected) in enumerate(examples):
        if start + number in outcomes.failed:
            try:
                got = repr(eval(source, dict(namespace)))
            except BaseException as error:
                got = f"{type(error).__name__}: {error}"
            wrong.append(f"`{source}` should give {expected!r}, the task says; it gives {got}")
    return wrong


def contradicting_examples(asserts, failing, examples):
    """The failing asserts that expect of a call something other than the task's own
    example for the very same call: the test's mistake, whatever the code does."""
    said = {}
    for source, expected in examples:
        said[ast.dump(ast.parse(source, mode="eval").body)] = expected
    found = []
    for line in failing:
        test = asserts[line].test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            continue
        for call, value in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            key = ast.dump(call)
            if key not in said:
                continue
            try:
                expected = ast.literal_eval(value)
            except (ValueError, SyntaxError, TypeError):
                break
            if expected != said[key]:
                found.append(line)
            break
    return found


class Run:
    """One run of the test, as the rules see it and leave it."""

    def __init__(self):
        self.examples = []  # the task's own examples: (call, expected) pairs
        self.source = ""  # the test as written
        self.cut = None  # what of a cut-off test was left out
        self.tree = None  # the test as it will run, after its mends
        self.written = None  # the mended test before its asserts were rewritten to run softly
        self.asserts = {}  # line -> the assert there
        self.now = Outcomes()  # what became of each assert on the code now
        self.namespace = {}  # what the test's run left defined
        self.failing = []  # lines of the asserts the code failed and no rule set aside


class Rule:
    """A rule of the runner: `judge(run)` mends the test, ends the run (`sys.exit`,
    `broken`), or lets it go on. A rule switched off in `verify.disabled` is not asked,
    except one whose `judge` decides how the run ends either way (`always`): it reads
    `on(id)` itself, and `broken(..., otherwise=)` says what off means for it. Rules
    with `first_test` blame the test only the first time: the test written again after
    they found it broken is let be."""

    def __init__(self, id, judge, first_test=False, always=False):
        self.id, self.judge, self.first_test, self.always = id, judge, first_test, always

    def applies(self):
        return (self.always or on(self.id)) and not (self.first_test and REWRITTEN)


def examples_given_by_the_task(run):
    """The task's own examples are the strongest word on what the code must give: code
    that does not give them fails, whatever the team's test says."""
    run.examples = task_examples()
    wrong = check_examples(run.examples) if run.examples else []
    for line in wrong:
        print(line)
    if wrong:
        fired("tests.examples")
        sys.exit(1)
    if run.examples:
        print(f"{EXAMPLES_GIVEN} {len(run.examples)}")


def readable(run):
    run.source = open(TEST).read()
    try:
        run.tree, run.cut = parse_test(run.source)
    except SyntaxError:
        traceback.print_exc()
        broken("acceptance.unreadable")
    run.tree = ast.fix_missing_locations(SameInterpreter().visit(run.tree))


def cut_off(run):
    if run.cut:
        print(run.cut)
        fired("repair.test-cut-off")


def own_said(run):
    if without_own_said(run.tree):
        print("the test's own said() was left out: the one given to it compares printed text")
        fired("repair.test-own-said")


def arithmetic_beside(run):
    for note in own_arithmetic(run.tree, run.source):
        print(note)
        fired("repair.test-own-arithmetic")


def missing_imports(run):
    for note in import_project_names(run.tree):
        print(note)
        fired("repair.test-missing-import")


def runs_something(run):
    if not runs_project_code(run.tree):
        broken("acceptance.runs-nothing",
               "the test never runs the team's code: it imports no module of the project and runs no program")


def function_not_program(run):
    function = program_instead_of_function(run.tree)
    if function:
        broken("acceptance.program-for-function",
               f"the test runs a program, but the task is about a function, {function}: import it and check what it returns")


def ran(run):
    """Runs the test on the code now, each assert on its own. The code raising or
    exiting fails it; the test's own error or `sys.exit` is a broken test."""
    run.written = copy.deepcopy(run.tree)
    tree = ast.fix_missing_locations(UnittestAsserts().visit(run.tree))
    tree = ast.fix_missing_locations(WrittenFloats(run.source, bool(INTENT.get("aboutRounding"))).visit(tree))
    run.asserts = {n.lineno: n for n in ast.walk(tree) if isinstance(n, ast.Assert)}
    run.tree = SoftAsserts().visit(tree)
    try:
        run.namespace = execute(run.tree, run.now)
    except SystemExit as e:
        if e.code not in (None, 0):
            print(f"the test exited with {e.code}")
            if raised_in_code(e):
                sys.exit(1)
            broken("acceptance.test-exits", otherwise=1)
    except BaseException as e:
        traceback.print_exc()
        if raised_in_code(e):
            path = opened_not_there(run, e)
            if path and on("acceptance.missing-input"):
                missing_input(path)
            sys.exit(1)
        if on("acceptance.test-error"):
            say_invented([e])
        broken("acceptance.test-error", otherwise=1)
    run.failing = sorted(run.now.failed)


def no_errors_of_its_own(run):
    by_test = [line for line, (kind, _) in run.now.failed.items() if kind == "broken"]
    if by_test:
        if on("acceptance.test-error"):
            say_invented(run.now.errors[line] for line in by_test)
        broken("acceptance.test-error", "\n".join(run.now.failed[line][1] for line in by_test), otherwise=1)


def long_values_right(run):
    """A long value written by hand that the code matches is as good a check as any; one
    it does not match is more likely the test's mistake than the code's."""
    long_values = long_expected_values(run.written, run.source)
    wrong = [long_values[line] for line in run.failing if line in long_values]
    if wrong:
        broken(
            "acceptance.long-expected-value",
            f"the test writes out long expected values by hand, which are easy to get wrong "
            f"(`{wrong[0]}`): check single items, lengths and short results instead",
        )


def self_comparisons(asserts, lines):
    """Of `lines`, the asserts that compare a call with the very same call (`f(2) ==
    f(2)`): true of any code, they check nothing. (`sorted(f(x)) == f(x)` does check
    something, and is not one.)"""
    found = []
    for line in lines:
        test = asserts[line].test
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            continue
        left, right = test.left, test.comparators[0]
        calls = any(isinstance(n, ast.Call) for n in ast.walk(left))
        if calls and ast.dump(left) == ast.dump(right):
            found.append(line)
    return found


def checks_the_code(run):
    """Passing asserts that compare the code with itself are not counted; a test left
    with none checks nothing, and is broken."""
    same = self_comparisons(run.asserts, sorted(run.now.passed))
    if not same:
        return
    for line in same:
        shown = ast.get_source_segment(run.source, run.asserts[line]) or f"line {line}"
        print(f"ignored: `{shown}` compares a call with the same call, which holds for any code")
    run.now.passed -= set(same)
    if not run.now.passed:
        broken(
            "acceptance.compares-code-with-itself",
            "each assert compares a call of the code with the same call, which holds for any code: "
            "work the expected result out from the inputs instead",
        )
    fired("acceptance.compares-code-with-itself")


def asserted_something(run):
    if not run.failing and not run.now.passed:
        broken("acceptance.no-assert", "the test ran no assert", otherwise=0)


def on_task(run):
    if not run.failing:
        beside = beside_the_task(run.tree, run.namespace, run.now.passed, run.asserts)
        if beside:
            broken("acceptance.off-task", beside)


# A file's name as a test writes it: `data.txt`, `input/rates.csv`. Only the
# extensions of text and data files, so that a domain (`example.com`) or a name with a
# dot (`Mr.Smith`) is not taken for one.
FILE_NAME = re.compile(
    r"^[\w.\-/]*\w\.(txt|csv|tsv|json|jsonl|log|md|ini|cfg|conf|toml|yaml|yml|xml|html|dat|data|in|out|sql|db|py|js)$",
    re.IGNORECASE,
)
WRITE_MODES = re.compile(r"[wax]")


def paths_in(node):
    """The strings in `node` written like a file's name."""
    return {
        n.value for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and FILE_NAME.match(n.value)
    }


def written_by_the_test(tree):
    """The paths the test writes itself: `open(path, "w")`, `Path(path).write_text(…)`."""
    targets = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open" and node.args:
            modes = node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
            if any(isinstance(m, ast.Constant) and isinstance(m.value, str) and WRITE_MODES.search(m.value) for m in modes):
                targets.append(node.args[0])
        elif isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes", "touch"):
            targets.append(func.value)
    written = set().union(*(paths_in(target) for target in targets))
    # `path = "data.txt"` … `open(path, "w")`: the name's value is written too.
    names = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            written |= paths_in(node.value)
    return written


def inputs_not_there(run):
    """Paths the test hands to the project's code or to a program (`count(\"data.txt\")`,
    `subprocess.run([..., "data.txt"])`) that no file of the workspace has, the test never
    writes, and the task does not name: the code was run on nothing."""
    written = written_by_the_test(run.tree)
    given = set()
    for node in ast.walk(run.tree):
        if not isinstance(node, ast.Call):
            continue
        name = call_name(node)
        to_project = bool(name) and defined_under(source_file(run.namespace, *name), ROOT)
        if to_project or starts_program(node.func):
            for arg in node.args + [k.value for k in node.keywords]:
                given |= paths_in(arg)
    return not_there(given - written)


def not_there(paths):
    """Of `paths`, those no file of the workspace has and the task does not name."""
    return sorted(
        path for path in paths
        if not os.path.exists(os.path.join(ROOT, path))
        and os.path.basename(path) not in TASK_TEXT
    )


def opened_not_there(run, error):
    """The path of a file the test names and nobody wrote, when the code failed opening it
    (`FileNotFoundError`), else None."""
    if not isinstance(error, FileNotFoundError) or not error.filename:
        return None
    path = os.path.relpath(os.path.abspath(error.filename), ROOT)
    named = paths_in(run.tree) - written_by_the_test(run.tree)
    return path if path in not_there(named) else None


def missing_input(path):
    broken(
        "acceptance.missing-input",
        f"the test runs the code on `{path}`, which is not there: no file has that "
        f"name, the test never writes it and the task does not name it. Write the file the "
        f"test needs first (`with open(\"{path}\", \"w\") as f: f.write(...)`), then "
        f"run the code on it",
    )


def inputs_there(run):
    """A failing test that ran the code on a file nobody wrote says nothing of the code."""
    missing = inputs_not_there(run)
    if missing:
        missing_input(missing[0])


def agrees_with_the_examples(run):
    """An assert against the task's own example for the same call (which the code gave,
    or `tests.examples` would have failed it) is the test's mistake: ignored, and said."""
    contradicting = contradicting_examples(run.asserts, run.failing, run.examples)
    if contradicting:
        for line in contradicting:
            shown = ast.get_source_segment(run.source, run.asserts[line]) or f"line {line}"
            print(f"ignored: `{shown}` expects other than the task's own example for that call")
        fired("acceptance.contradicts-example")
        run.failing = [line for line in run.failing if line not in contradicting]


def about_the_task(run, line):
    calls = project_calls(run.asserts[line], run.namespace, ROOT)
    return not calls or any(name in TASK_WORDS for name, _ in calls)


def report(run, lines):
    for line in lines:
        kind, text = run.now.failed[line]
        print(text)
        test = run.asserts[line].test if line in run.asserts else None
        if kind == "assert" and line in run.now.sides and isinstance(test, ast.Compare):
            left, right = run.now.sides[line]
            print(f"The left side, `{ast.unparse(test.left)}`, is {left}; "
                  f"the right side, `{ast.unparse(test.comparators[0])}`, is {right}.\n")


def failed_before_too(run):
    """Only asserts about code the task does not name failed: the test runs again on the
    code as it was before the task. What failed there too is set aside."""
    if not ORIGINALS or any(about_the_task(run, line) for line in run.failing):
        return
    forget_project_modules()
    sys.path.insert(0, ORIGINALS)
    before = Outcomes()
    try:
        then = execute(run.tree, before)
    except BaseException:
        then = None
    ignored = [
        line
        for line in run.failing
        if then is not None
        and line in before.failed
        and all(under(file, ORIGINALS) for _, file in project_calls(run.asserts[line], then, ROOT))
    ]
    if len(ignored) < len(run.failing):
        return
    if not any(about_the_task(run, line) for line in run.now.passed):
        report(run, run.failing)
        broken("acceptance.off-task",
               "the test checks nothing the task asks for: its failing asserts are about other code")
    for line in ignored:
        shown = ast.get_source_segment(run.source, run.asserts[line]) or f"line {line}"
        print(f"ignored: `{shown}` checks code the task does not name, and the code before the task failed it too")
        fired("acceptance.ignored-assert")
    run.failing = []


def forget_project_modules():
    """Drops the project's modules already imported, so that the next run of the test
    imports them again from whatever is first on `sys.path`."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name != "__main__" and file and under(file, ROOT):
            del sys.modules[name]


def compared_project_calls(run, lines):
    """Of `lines` (failing asserts), the comparisons the code failed with a value (not by
    raising) that call the project's code: those a second solution can speak to."""
    return [
        line for line in lines
        if run.now.failed[line][0] == "assert"
        and line in run.now.sides
        and project_calls(run.asserts[line], run.namespace, ROOT)
    ]


def without_docstrings(tree):
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def same_code_as_the_team(directory):
    """Whether every Python file of the second solution is the team's file of the same
    path again (docstrings aside): then it is no second opinion."""
    same = []
    for base, _, names in os.walk(directory):
        for name in names:
            if not name.endswith(".py"):
                continue
            second = os.path.join(base, name)
            team = os.path.join(ROOT, os.path.relpath(second, directory))
            trees = read_tree(second), read_tree(team)
            same.append(None not in trees and without_docstrings(trees[0]) == without_docstrings(trees[1]))
    return bool(same) and all(same)


class TookTooLong(Exception):
    pass


def bounded_call(function, args, seconds=2):
    """`function(*args)`, or TookTooLong: a function called on a value of the wrong kind
    may loop forever."""
    import signal

    def stop(signum, frame):
        raise TookTooLong()

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        return function(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def same_value(a, b, digits):
    """One value, numbers compared as `WrittenFloats` compares them, inside lists too."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_value(x, y, digits) for x, y in zip(a, b))
    return same_float(a, b, digits or 0)


# What a function may not do to be called beyond what the test called: the calls that
# reach outside the program (files, processes, the network), by name, by method, or on
# a module that does.
WORLD_FUNCTIONS = {"open", "exec", "eval", "input", "__import__", "system", "popen", "urlopen"}
WORLD_METHODS = {"write", "writelines", "write_text", "write_bytes", "unlink", "rmdir", "rmtree",
                 "mkdir", "makedirs", "rename", "touch", "kill", "connect", "sendall", "urlopen"}
WORLD_MODULES = {"os", "sys", "subprocess", "shutil", "socket", "pathlib", "requests", "urllib",
                 "sqlite3", "http"}


def keeps_to_itself(function):
    """Whether `function`'s own code calls nothing that reaches outside the program: only
    such a function is called with the test's arguments when the test did not call it.
    (What the functions it calls do is not followed.)"""
    try:
        tree = ast.parse(inspect.getsource(function).strip())
    except (OSError, TypeError, SyntaxError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        if isinstance(callee, ast.Name) and callee.id in WORLD_FUNCTIONS:
            return False
        if isinstance(callee, ast.Attribute):
            owner = callee.value
            if callee.attr in WORLD_METHODS or (isinstance(owner, ast.Name) and owner.id in WORLD_MODULES):
                return False
    return True


def inverse_of(run, test):
    """For `f(x, …) == v` whose v is what another function g of f's module gives for
    the same arguments, where f and g undo each other on them in the code (f(g(x, …), …)
    is x and g(f(x, …), …) is x): (the call, the same call of g, f's value, v). Else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    for call, written in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if not (isinstance(call, ast.Call) and call_name(call) and call.args and not call.keywords):
            continue
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        owner, name = call_name(call)
        f = run.namespace.get(name) if owner is None else getattr(run.namespace.get(owner), name, None)
        if not (inspect.isfunction(f) and defined_under(source_file(run.namespace, owner, name), ROOT)
                and keeps_to_itself(f)):
            continue
        module = sys.modules.get(f.__module__)
        try:
            listed = ast.fix_missing_locations(ast.Expression(ast.List(call.args, ast.Load())))
            args = eval(compile(listed, TEST, "eval"), run.namespace)
            expected = eval(compile(ast.Expression(written), TEST, "eval"), run.namespace)
            given = bounded_call(f, args)
        except BaseException:
            return None
        # A task about rounding keeps the digits exact, as `WrittenFloats` does.
        digits = None if INTENT.get("aboutRounding") else written_decimals(written, run.source)
        x, rest = args[0], args[1:]
        for g in vars(module).values() if module else ():
            if not inspect.isfunction(g) or g is f or g.__module__ != f.__module__ or not keeps_to_itself(g):
                continue
            try:
                inverse = bounded_call(g, args)
                undone = (
                    same_value(inverse, expected, digits)
                    and not same_value(given, expected, digits)
                    and same_value(bounded_call(f, [inverse, *rest]), x, None)
                    and same_value(bounded_call(g, [given, *rest]), x, None)
                )
            except BaseException:
                continue
            if undone:
                arguments = ", ".join(ast.unparse(a) for a in call.args)
                return f"{name}({arguments})", f"{g.__name__}({arguments})", given, expected
        return None
    return None


def inverse_values(run):
    """A failing comparison that expects of f what f's inverse in the same module gives
    (`decode(s) == encode(s)`'s value, `c_to_f(0) == -17.78`): the test took one of the
    pair for the other, or the code swapped them, and nothing in the test says which. It
    is set aside, and said; a test passed so hands the task to review (`Evidence::
    Disputed`), never calls it checked."""
    # As written: a float compared at its written precision no longer reads as `==`.
    written = {n.lineno: n for n in ast.walk(run.written) if isinstance(n, ast.Assert)} if run.written else {}
    swapped = []
    for line in run.failing:
        if run.now.failed[line][0] != "assert" or line not in written:
            continue
        found = inverse_of(run, written[line].test)
        if not found:
            continue
        call, inverse, given, expected = found
        text = ast.get_source_segment(run.source, written[line]) or f"line {line}"
        print(f"set aside, the completion asks for a review: `{text}`: `{call}` is {shown(given)}; the test "
              f"expects {shown(expected)}, what `{inverse}` gives, and the two functions undo each other in "
              f"the code: the test took one for the other, or the code swapped them")
        swapped.append(line)
    if swapped:
        fired("acceptance.inverse-value")
        run.failing = [line for line in run.failing if line not in swapped]


def second_solution_agrees(run):
    """A failing comparison the second solution fails with the very same values is
    disputed: two solutions of the task, one written apart from the team's code and
    test, give one value and the test expects another. It is set aside, and said; a
    test passed with such an assert set aside is the weakest evidence there is, and the
    task's completion asks for a review (`Evidence::Disputed`). The second solution
    counts only if it gives the task's own examples, and only where the assert called
    it: a test that runs a program runs the team's."""
    compared = compared_project_calls(run, run.failing)
    if not compared:
        return
    if not SECOND:
        print("::disputable")
        return
    if not on("acceptance.disputed-assert"):
        return
    if same_code_as_the_team(SECOND):
        print("a second solution of the task was written, and it is the team's code again: it settles nothing")
        return
    forget_project_modules()
    sys.path.insert(0, SECOND)
    second = Outcomes()
    try:
        wrong = check_examples(run.examples) if run.examples else []
        if wrong:
            print("a second solution of the task does not give the task's own examples, so it settles nothing: " + wrong[0])
            return
        try:
            then = execute(run.tree, second)
        except BaseException:
            print("a second solution of the task could not run the test: it settles nothing")
            return
    finally:
        sys.path.remove(SECOND)
        forget_project_modules()
    disputed = [
        line for line in compared
        if second.failed.get(line, ("",))[0] == "assert"
        and second.sides.get(line) == run.now.sides[line]
        and project_calls(run.asserts[line], then, SECOND)
    ]
    if not disputed:
        return
    for line in disputed:
        shown = ast.get_source_segment(run.source, run.asserts[line]) or f"line {line}"
        test = run.asserts[line].test
        print(f"disputed, set aside: `{shown}`: `{ast.unparse(test.left)}` is {run.now.sides[line][0]} "
              f"in the team's code and in a second solution written from the task alone")
    fired("acceptance.disputed-assert")
    run.failing = [line for line in run.failing if line not in disputed]


# Every rule, in the order it is asked. Before the test runs: what the task's examples
# say, then the test's text, mended or found broken. Then the run. Then, when asserts
# failed, whether the test or the code is to blame for each; when none did, whether the
# test checked anything of the task. What is failing at the end fails the code.
BEFORE_THE_RUN = [
    Rule("tests.examples", examples_given_by_the_task),
    Rule("acceptance.unreadable", readable, always=True),
    Rule("repair.test-cut-off", cut_off, always=True),
    Rule("repair.test-own-said", own_said),
    Rule("repair.test-missing-import", missing_imports),
    Rule("repair.test-own-arithmetic", arithmetic_beside),
    Rule("acceptance.runs-nothing", runs_something),
    Rule("acceptance.program-for-function", function_not_program, first_test=True),
]
THE_RUN = [
    Rule("acceptance.test-exits", ran, always=True),
    Rule("acceptance.test-error", no_errors_of_its_own, always=True),
]
WHEN_ASSERTS_FAILED = [
    Rule("acceptance.missing-input", inputs_there),
    Rule("acceptance.long-expected-value", long_values_right, first_test=True),
    Rule("acceptance.contradicts-example", agrees_with_the_examples),
    Rule("acceptance.ignored-assert", failed_before_too),
    Rule("acceptance.inverse-value", inverse_values),
    Rule("acceptance.disputed-assert", second_solution_agrees, always=True),
]
WHEN_ALL_PASSED = [
    Rule("acceptance.compares-code-with-itself", checks_the_code),
    Rule("acceptance.no-assert", asserted_something, always=True),
    Rule("acceptance.off-task", on_task),
]


def main():
    run = Run()
    for rule in BEFORE_THE_RUN + THE_RUN:
        if rule.applies():
            rule.judge(run)
    if run.failing:
        for rule in WHEN_ASSERTS_FAILED:
            if rule.applies():
                rule.judge(run)
                if not run.failing:
                    sys.exit(0)
        report(run, run.failing)
        sys.exit(1)
    for rule in WHEN_ALL_PASSED:
        if rule.applies():
            rule.judge(run)
    sys.exit(0)


main()
