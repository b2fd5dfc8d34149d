"""What Conclave's checks read in Python code: stubs, broken promises and what a rewrite
lost. One program, kept as a file with its own tests (test_checks.py), run with the
workspace as its working directory by `python3 -I` (isolated: no file of the workspace is
ever imported; everything is read with `ast`). What a module defines, binds and leaves
unwritten is read by definitions.py, the one reader of Python definitions, shared with
the acceptance test's runner.

Every finding is one JSON line, `{"rule": ID, "message": TEXT}`; the rule ids are the
stable names of docs/checks.md, and a rule named in the disabled list is not run.

    checks.py stubs DISABLED_JSON PATH...
    checks.py contracts DISABLED_JSON PAIRS_JSON TASK (whole|subtask) (removes|keeps) MAY_LOSE_JSON
    checks.py definitions DISABLED_JSON PAIRS_JSON MAY_LOSE_JSON
    checks.py docstrings DISABLED_JSON PAIRS_JSON

`docstrings` is a repair, not a rule: for each file that lost docstrings it had, one JSON
line `{"path": PATH, "content": TEXT, "names": [NAME...]}`, the text with them put back.

PAIRS_JSON is a list of [path, original text or null]: the files checked and what they held
when the task began. MAY_LOSE_JSON lists the names whose definitions the task may take
away (every name it writes when it removes code, else those it writes as code): a
definition lost under any other name was lost in a rewrite.
"""

import ast
import json
import os
import sys

from definitions import bound_at_top, functions, module_file, project_files, unbound, unwritten


# ---- what a finding is ------------------------------------------------------------------


def finding(rule, message):
    return {"rule": rule, "message": message}


# ---- python.stub: a function with no body -----------------------------------------------


def stubs(paths):
    """Functions whose body is only a docstring, `pass`, `...` or NotImplementedError.
    Abstract methods, overloads and Protocol or ABC members are meant to be empty."""
    found = []
    for path in paths:
        try:
            tree = ast.parse(open(path, encoding="utf-8").read(), path)
        except Exception:
            continue
        skip = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                "Protocol" in ast.unparse(b) or "ABC" in ast.unparse(b) for b in node.bases
            ):
                skip.update(id(n) for n in node.body)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or id(node) in skip:
                continue
            if any(w in ast.unparse(d) for d in node.decorator_list for w in ("abstract", "overload")):
                continue
            if unwritten(node):
                found.append(finding(
                    "python.stub",
                    f"{path}:{node.lineno}: function `{node.name}` has no body, only a docstring, "
                    "`pass`, `...` or NotImplementedError: implement it",
                ))
    return found


# ---- reading a module -------------------------------------------------------------------


def promise(fn):
    if any(w in ast.unparse(d) for d in fn.decorator_list for w in ("abstract", "overload")):
        return None
    if fn.returns is not None and ast.unparse(fn.returns) not in ("None", "NoReturn", "Never"):
        return "its signature says it returns `" + ast.unparse(fn.returns) + "`"
    doc = (ast.get_docstring(fn) or "").strip()
    if doc.lower().startswith("return") and not doc.lower().startswith(("returns nothing", "returns none")):
        return 'its docstring says "' + doc.splitlines()[0].strip() + '"'
    return None


def gives(fn):
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def unparsed_options(tree):
    """`args.shout` read where args came from an argparse parser that never adds
    --shout: an AttributeError whenever the program runs. [(name, line)]; nothing when
    the parser is built in ways not read here."""
    results, dests = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "parse_args":
            results.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr in ("add_subparsers", "set_defaults", "parse_known_args", "add_mutually_exclusive_group"):
            return []
        if node.func.attr == "add_argument":
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(strings) != len(node.args) or not strings:
                return []
            dest = [k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)]
            longs = [o for o in strings if o.startswith("--")]
            name = (dest or longs or strings)[0]
            dests.add(name.lstrip("-").replace("-", "_"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) and node.value.id in results:
            if node.attr not in dests and not node.attr.startswith("_"):
                found.setdefault(node.attr, node.lineno)
    return sorted(found.items(), key=lambda item: item[1])


def main_block(tree):
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test):
            return node
    return None


def header(source, fn):
    lines = source.splitlines()
    end = fn.body[0].end_lineno if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(getattr(fn.body[0], "value", None), ast.Constant) else fn.lineno
    start = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
    return "\n".join(lines[start - 1:end])


# What was read from disk and parsed, for one run of the checks (cleared by each).
_texts = {}
_trees = {}


def text_of(path):
    if path not in _texts:
        try:
            _texts[path] = open(path, encoding="utf-8").read()
        except Exception:
            _texts[path] = None
    return _texts[path]


def parsed(path, text=None):
    key = (path, text)
    if key not in _trees:
        try:
            _trees[key] = ast.parse(text if text is not None else text_of(path), path)
        except Exception:
            _trees[key] = None
    return _trees[key]


def broken_imports(changed, whole_task, removes):
    """`from mathx import calc` where the project's mathx.py does not define calc: a name
    the task's change took from a module while a file still imports it, or an import the
    team wrote of a name that is not there. Checking one subtask, only its own files
    count: another subtask may still update the rest."""
    problems = []
    for importer in (project_files() if whole_task else sorted(changed)):
        tree = parsed(importer)
        if tree is None:
            continue
        original = changed.get(importer)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            target = module_file(node.module, importer)
            target_tree = parsed(target) if target else None
            names_now = bound_at_top(target_tree) if target_tree else None
            if names_now is None:
                continue
            before_tree = parsed(target, changed[target]) if changed.get(target) is not None else None
            names_before = (bound_at_top(before_tree) or set()) if before_tree else set()
            for alias in node.names:
                name = alias.name
                if name == "*" or name in names_now or os.path.isfile(os.path.join(os.path.dirname(target), name + ".py")):
                    continue
                statement = ast.get_source_segment(text_of(importer), node) or ""
                if name in names_before:
                    if removes:
                        how = f"change the import and every use of `{name}` to what {target} defines now"
                    else:
                        how = f"put `{name}` back in {target} as it was (the task does not remove it)"
                    problems.append(f"{importer}:{node.lineno}: imports `{name}` from {node.module}, but {target} no longer defines it (it did before the task): {how}")
                elif importer in changed and (original is None or statement not in original):
                    problems.append(f"{importer}:{node.lineno}: imports `{name}` from {node.module}, but {target} does not define it")
    return problems


# ---- the contracts of a change ----------------------------------------------------------


def contracts(pairs, task, whole_task, removes, disabled, named=frozenset()):
    """Broken imports, definitions a rewrite lost, promises of a return value not kept,
    names read and bound nowhere, options read that the parser never adds, and a lost
    main block: each against the file as it was when the task began."""
    _texts.clear()
    _trees.clear()
    found = []
    on = lambda rule: rule not in disabled
    if on("python.broken-import"):
        for problem in broken_imports({os.path.normpath(p): o for p, o in pairs}, whole_task, removes):
            found.append(finding("python.broken-import", problem))
    for path, original in pairs:
        try:
            source = open(path, encoding="utf-8").read()
            tree = ast.parse(source, path)
            now = functions(tree)
        except Exception:
            continue
        old_tree = None
        if original is not None:
            try:
                old_tree = ast.parse(original, path)
            except Exception:
                old_tree = None
        before = functions(old_tree) if old_tree is not None else {}
        if on("python.lost-definition"):
            for name, old in before.items():
                # Gone without the task taking it away: lost in a rewrite (a renamed or
                # removed function is named by its task).
                if name not in now and name.split(".")[-1] not in named:
                    found.append(finding(
                        "python.lost-definition",
                        f"{path}: `{name}` was in the file before the task and is gone; the task "
                        f"did not ask to remove it: put it back as it was:\n"
                        f"{ast.get_source_segment(original, old) or header(original, old)}",
                    ))
        if on("python.unkept-return"):
            for name, new in now.items():
                old = before.get(name)
                promised = promise(old) if old is not None else None
                why = promised or promise(new)
                if why and not gives(new):
                    keep = f" Keep the signature and docstring:\n{header(original, old)}" if promised else ""
                    found.append(finding(
                        "python.unkept-return",
                        f"{path}:{new.lineno}: `{name}` must return its result ({why}), but it never "
                        f"returns a value; return it instead of printing it.{keep}",
                    ))
        if on("python.unbound-name"):
            # Only names the file did not already leave unbound are the team's doing.
            already = unbound(old_tree) if old_tree is not None else {}
            for name, line in sorted(unbound(tree).items(), key=lambda item: item[1]):
                if name in already:
                    continue
                had = ""
                if old_tree is not None:
                    for node in old_tree.body:
                        binds = isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign,
                                                  ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        names = {getattr(n, "id", None) or getattr(n, "asname", None)
                                 or (getattr(n, "name", None) or "").split(".")[0] for n in ast.walk(node)}
                        if binds and name in names:
                            had = (f"; before the task the file had:\n"
                                   f"{ast.get_source_segment(original, node)}\nput it back")
                            break
                found.append(finding(
                    "python.unbound-name",
                    f"{path}:{line}: `{name}` is used but never defined or imported{had}",
                ))
        if on("python.unparsed-option"):
            unparsed_before = {name for name, _ in unparsed_options(old_tree)} if old_tree is not None else set()
            for name, line in unparsed_options(tree):
                if name in unparsed_before:
                    continue
                option = name.replace("_", "-")
                found.append(finding(
                    "python.unparsed-option",
                    f"{path}:{line}: `args.{name}` is read, but the parser never adds `--{option}`: add "
                    f"it, for a flag with parser.add_argument(\"--{option}\", action=\"store_true\")",
                ))
        if (on("python.lost-main") and old_tree is not None and main_block(old_tree) is not None
                and main_block(tree) is None and "__main__" not in task):
            found.append(finding(
                "python.lost-main",
                f"{path}: its `if __name__ == \"__main__\":` block was in the file before the task and "
                f"is gone, so running the file does nothing: put it back as it was:\n"
                f"{ast.get_source_segment(original, main_block(old_tree))}",
            ))
    return found


# ---- a repair: definitions a rewrite dropped --------------------------------------------


TOP_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def put_back_definitions(source, original, named):
    """`source` with the top-level functions and classes `original` had, and `source`
    lost, put back as they were, next to the definition that came before them (else
    after them) there: (new source, the names), or None. A name the task may take away
    (`named`) may be gone on purpose, and stays gone."""
    try:
        tree, old_tree = ast.parse(source), ast.parse(original)
    except SyntaxError:
        return None
    now = {node.name: node for node in tree.body if isinstance(node, TOP_DEFINITIONS)}
    bound = bound_at_top(tree)
    if bound is None:
        return None
    old = [node for node in old_tree.body if isinstance(node, TOP_DEFINITIONS)]
    lost = [node for node in old if node.name not in bound and node.name not in named]
    if not lost:
        return None
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    old_lines = original.splitlines(keepends=True)
    start_of = lambda node: min([node.lineno] + [d.lineno for d in node.decorator_list])
    inserts = []  # (index in lines, order, text)
    for order, node in enumerate(lost):
        text = "".join(old_lines[start_of(node) - 1:node.end_lineno]).rstrip("\n") + "\n"
        at = old.index(node)
        before = next((now[p.name] for p in reversed(old[:at]) if p.name in now), None)
        after = next((now[p.name] for p in old[at + 1:] if p.name in now), None)
        if before is not None:
            inserts.append((before.end_lineno, order, "\n\n" + text))
        elif after is not None:
            inserts.append((start_of(after) - 1, order, text + "\n\n"))
        else:
            main = main_block(tree)
            end = main.lineno - 1 if main is not None else len(lines)
            inserts.append((end, order, ("\n\n" if end else "") + text + ("\n\n" if main is not None else "")))
    # From the end, so earlier places keep their line numbers; at one place, in order.
    for at, _, text in sorted(inserts, key=lambda i: (i[0], i[1]), reverse=True):
        lines.insert(at, text)
    mended = "".join(lines)
    try:
        ast.parse(mended)
    except SyntaxError:
        return None
    return mended, [node.name for node in lost]


def put_back(pairs, mend):
    """For each (path, original) whose file `mend(source, original)` mends: its path, its
    mended text and the names mended."""
    found = []
    for path, original in pairs:
        if original is None:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
        except OSError:
            continue
        mended = mend(source, original)
        if mended:
            found.append({"path": path, "content": mended[0], "names": mended[1]})
    return found


def definitions(pairs, named):
    """For each (path, original) whose file lost definitions the task may not take away
    (`named`): its text with them back."""
    return put_back(pairs, lambda source, original: put_back_definitions(source, original, named))


# ---- a repair: docstrings a rewrite dropped --------------------------------------------


def documented(tree):
    """{qualified name: node} of the functions and classes of `tree` with a docstring."""
    found = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                found[name] = node
                visit(node.body, name + ".")

    visit(tree.body, "")
    return found


def docstring_node(node):
    first = node.body[0] if node.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return first
    return None


def put_back_docstrings(source, original):
    """`source` with the docstrings `original` had and `source` lost put back, as they
    were, first in their function or class: (new source, the names), or None. A leading
    block of comments saying the same lines (a docstring turned into comments) goes."""
    try:
        tree, old_tree = ast.parse(source), ast.parse(original)
    except SyntaxError:
        return None
    before, now = documented(old_tree), documented(tree)
    lines = source.splitlines(keepends=True)
    old_lines = original.splitlines(keepends=True)
    inserts = []
    for name, node in now.items():
        old = before.get(name)
        if old is None or docstring_node(node) is not None or docstring_node(old) is None:
            continue
        first = node.body[0]
        # A body on the header's line (`def f(): return 1`) has no line to put it on.
        if first.lineno <= node.lineno:
            continue
        doc = docstring_node(old)
        text = "".join(old_lines[doc.lineno - 1:doc.end_lineno])[doc.col_offset:]
        if not text.endswith("\n"):
            text += "\n"
        shift = first.col_offset - doc.col_offset

        def reindent(line):
            if not line.strip() or shift == 0:
                return line
            if shift > 0:
                return " " * shift + line
            return line[min(-shift, len(line) - len(line.lstrip(" "))):]

        doc_lines = text.splitlines(keepends=True)
        shifted = [" " * first.col_offset + doc_lines[0]] + [reindent(l) for l in doc_lines[1:]]
        # The comment lines just above the body that repeat the docstring's lines.
        said = {l.strip() for l in ast.get_docstring(old, clean=True).splitlines() if l.strip()}
        start = first.lineno - 1
        while start > node.lineno and lines[start - 1].strip().startswith("#"):
            if lines[start - 1].strip().lstrip("#").strip() not in said:
                break
            start -= 1
        inserts.append((start, first.lineno - 1, shifted, name))
    if not inserts:
        return None
    for start, end, shifted, _ in sorted(inserts, reverse=True):
        lines[start:end] = shifted
    mended = "".join(lines)
    try:
        ast.parse(mended)
    except SyntaxError:
        return None
    return mended, sorted(name for *_, name in inserts)


def docstrings(pairs):
    """For each (path, original) whose file lost docstrings: its text with them back."""
    return put_back(pairs, put_back_docstrings)


def main(argv):
    command, disabled = argv[1], set(json.loads(argv[2]))
    if command == "stubs":
        found = [] if "python.stub" in disabled else stubs(argv[3:])
    elif command == "docstrings":
        found = [] if "repair.python-docstrings" in disabled else docstrings(json.loads(argv[3]))
    elif command == "definitions":
        named = set(json.loads(argv[4])) if len(argv) > 4 else set()
        found = [] if "repair.python-definitions" in disabled else definitions(json.loads(argv[3]), named)
    elif command == "contracts":
        pairs = json.loads(argv[3])
        task = argv[4] if len(argv) > 4 else ""
        named = set(json.loads(argv[7])) if len(argv) > 7 else set()
        found = contracts(pairs, task, argv[5:6] == ["whole"], argv[6:7] == ["removes"], disabled, named)
    else:
        print(f"unknown command {command}", file=sys.stderr)
        return 2
    for item in found:
        print(json.dumps(item))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
