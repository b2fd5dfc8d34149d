"""What Python code defines, binds, imports and leaves unwritten: the one reader of Python
definitions for Conclave's Python programs, the rules (checks.py) and the acceptance
test's runner (src/team/acceptance_runner.py). Everything is read with `ast`; no file of
the project is imported here.

Conclave embeds each program with this file joined ahead of it and the program's
`from definitions import …` line left out (`checks::python_program`); in the repository
the programs import it, which is how their tests run them. Tests: test_definitions.py.
"""

import ast
import builtins
import os

# Names every module has without binding them.
MODULE_NAMES = {
    "__file__", "__name__", "__doc__", "__builtins__", "__spec__", "__path__", "__package__",
    "__loader__", "__annotations__", "__class__",
}

# Folders that hold no code of the project's own.
NOT_THE_PROJECT = ("node_modules", "venv", "env", "site-packages")


def project_files(root=".", depth=3, limit=300):
    """The project's Python files under `root`, as paths relative to it, `depth` folders
    deep at most, sorted, the first `limit`: hidden, dunder and installed-package
    folders are not the project's."""
    found = []
    for directory, subdirectories, files in os.walk(root):
        inside = os.path.relpath(directory, root)
        level = 0 if inside == "." else inside.count(os.sep) + 1
        subdirectories[:] = [
            d for d in subdirectories
            if not d.startswith((".", "__")) and d not in NOT_THE_PROJECT and level < depth
        ]
        found += [os.path.normpath(os.path.join(inside, f)) for f in files if f.endswith(".py")]
    return sorted(found)[:limit]


def module_name(path):
    """The dotted module name of a Python file's path relative to the project root."""
    stem = os.path.normpath(path)[: -len(".py")]
    if os.path.basename(stem) == "__init__":
        stem = os.path.dirname(stem)
    return stem.replace(os.sep, ".")


def module_file(module, importer, root="."):
    """The file `import module` reaches from `importer` (a path under `root`): from the
    root first, then beside the importer; None when the project has none."""
    for base in (root, os.path.join(root, os.path.dirname(importer))):
        stem = os.path.join(base, *module.split("."))
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if os.path.isfile(candidate):
                return os.path.normpath(os.path.relpath(candidate, root))
    return None


def read_tree(path):
    """The syntax tree of the file at `path`, or None when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            return ast.parse(f.read(), path)
    except (SyntaxError, ValueError, OSError, UnicodeDecodeError):
        return None


def defined_at_top(tree):
    """The functions, classes and variables a module itself defines at its top level:
    what a test may import from it."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def bound_at_top(tree):
    """Every name a module binds at its top level (also under a top-level if or try),
    its imports included: what `from module import name` can reach. None when that
    cannot be known: a star import, a module `__getattr__`."""
    names = set()
    for node in tree.body:
        for n in ast.walk(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if n.name == "__getattr__" and n in tree.body:
                    return None
                names.add(n.name)
            elif isinstance(n, ast.alias):
                if n.name == "*":
                    return None
                names.add(n.asname or n.name.split(".")[0])
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                names.add(n.id)
    return names


def project_modules(root=".", leave_out=()):
    """(module name, what it defines at its top level) for each of the project's Python
    files that parses, but the paths in `leave_out` (absolute)."""
    modules = []
    for path in project_files(root):
        full = os.path.join(root, path)
        if os.path.abspath(full) in leave_out:
            continue
        tree = read_tree(full)
        if tree is not None:
            modules.append((module_name(path), defined_at_top(tree)))
    return modules


def unbound(tree, given=()):
    """Names the code reads that nothing in it binds, nor the builtins or `given`, in a
    loose scope (a binding anywhere counts): {name: line of the first read}. Empty when a
    star import could bind anything."""
    bound = set(dir(builtins)) | MODULE_NAMES | set(given)
    reads = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return {}
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                reads[node.id] = min(node.lineno, reads.get(node.id, node.lineno))
            else:
                bound.add(node.id)
        for field in ("name", "rest"):
            value = getattr(node, field, None)
            if type(node).__name__.startswith("Match") and isinstance(value, str):
                bound.add(value)
    return {name: line for name, line in reads.items() if name not in bound}


def functions(tree):
    """The module's functions and methods by qualified name (`Cart.add`)."""
    found = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[prefix + node.name] = node
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    return found


def placeholder(statement):
    """A statement that does nothing a function is for: `pass`, `...`, a docstring or
    other bare constant, `raise NotImplementedError`."""
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True
    return (
        isinstance(statement, ast.Raise)
        and statement.exc is not None
        and "NotImplementedError" in ast.unparse(statement.exc)
    )


def unwritten(fn):
    """Whether a function has only a signature: its body is placeholders alone."""
    return all(placeholder(s) for s in fn.body)


def unwritten_functions(tree):
    """The functions (methods too) of a module that have only a signature."""
    return [
        node for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and unwritten(node)
    ]
