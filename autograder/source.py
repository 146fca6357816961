"""Collecting the learner's code so that it can run again in a fresh process.

From a notebook (its code cells, or the cells an IPython kernel has executed so far) the grader keeps
only what the graded function needs: every import, and the last definition of each name the function
uses, followed transitively (a Triton kernel it launches, a RawKernel built at top level, a block-size
constant). Cells that run experiments, print or time things are left out, so grading never re-runs
them. A function defined in a plain ``.py`` file is collected the same way from its file.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass


class SourceError(Exception):
    """The learner's code cannot be collected; the message says what to fix."""


@dataclass
class _Statement:
    order: int
    node: ast.stmt
    text: str
    binds: set
    uses: set
    is_import: bool


def _to_python(cell: str) -> str:
    """IPython syntax (%magics, !shell) becomes plain Python calls, which are then left out."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return cell
    return TransformerManager().transform_cell(cell)


def _bound_names(node: ast.stmt) -> set:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    names: set = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and current is not node:
            names.add(current.name)
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Store):
            names.add(current.id)
        stack.extend(ast.iter_child_nodes(current))
    return names


def _loads(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _used_names(node: ast.stmt) -> set:
    """Global names a statement reads. In a function, its parameters and the names it assigns are
    its own; decorators and default values are read in the enclosing scope. In a class, each method
    is such a function (its locals are not the module's names a notebook's later cell may bind)."""
    if isinstance(node, ast.ClassDef):
        outer = set()
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            outer |= _loads(expr)
        return outer.union(*(_used_names(stmt) for stmt in node.body))
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _loads(node)
    outer = set()
    for expr in [*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
        outer |= _loads(expr)
    arguments = node.args
    params = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    params |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    declared_global = {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}
    assigned = {n.id for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local = params | (assigned - declared_global)
    inner = set()
    for stmt in node.body:
        inner |= _loads(stmt)
    return outer | (inner - local)


def _segment(code: str, node: ast.stmt) -> str:
    """The statement's whole lines, decorators included (a FunctionDef starts at its `def`)."""
    first = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
    lines = code.splitlines()
    return "\n".join(lines[first - 1 : node.end_lineno])


def _statements(cells: list[str]) -> list[_Statement]:
    out = []
    for cell in cells:
        code = _to_python(cell)
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in tree.body:
            is_import = isinstance(node, (ast.Import, ast.ImportFrom))
            binds = _bound_names(node)
            if not binds:
                continue
            if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith, ast.Expr)):
                continue
            out.append(_Statement(len(out), node, _segment(code, node), binds, _used_names(node), is_import))
    return out


def extract(cells: list[str], entry: str, also: tuple[str, ...] = ()) -> str:
    """The module text that defines ``entry`` (and the other functions ``also`` names, which the
    grader calls too) and everything they need, in execution order."""
    statements = _statements(cells)
    if not any(entry in s.binds and not s.is_import for s in statements):
        raise SourceError(f"no function named {entry!r} is defined; define it with `def {entry}(...)` in a code cell and run that cell")
    last_binding: dict = {}
    for s in statements:
        for name in s.binds:
            last_binding[name] = s
    keep = {s.order for s in statements if s.is_import}
    needed = [entry, *also]
    seen = set()
    while needed:
        name = needed.pop()
        if name in seen or name not in last_binding:
            continue
        seen.add(name)
        statement = last_binding[name]
        keep.add(statement.order)
        needed.extend(statement.uses - seen)
    chunks = [s.text for s in statements if s.order in keep]
    return "\n\n".join(chunks) + "\n"


def notebook_cells(path: str) -> list[str]:
    """The code cells of a notebook on disk, graded (locked test) cells left out."""
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot read the notebook {path}: {exc}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SourceError(f"{path} is not a notebook (no list of cells)")
    return code_cells(nb)


def code_cells(nb: dict) -> list[str]:
    """The code cells of a notebook already read (a dict or an nbformat node), graded cells left out:
    what a graded cell prints or returns is never part of the learner's code."""
    cells = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            continue
        source = cell.get("source", "")
        cells.append("".join(source) if isinstance(source, list) else str(source))
    return cells


def _ipython_cells() -> list[str] | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    history = shell.user_ns.get("In")
    return [c for c in history if isinstance(c, str)] if isinstance(history, list) else None


def for_function(fn: Callable, also: tuple[str, ...] = ()) -> tuple[str, str]:
    """(module text, entry name) for a function the learner handed to the grader (with the other
    functions of theirs that ``also`` names)."""
    if not callable(fn):
        raise SourceError(f"grade() needs your function itself, got {type(fn).__name__}")
    entry = getattr(fn, "__name__", None)
    code = _class_code(fn) if inspect.isclass(fn) else getattr(fn, "__code__", None)
    if not entry or code is None or entry == "<lambda>":
        raise SourceError("grade() needs a function defined with `def` (or a class defined with `class`), not a lambda or another callable")
    filename = code.co_filename
    if os.path.isfile(filename) and filename.endswith(".py"):
        # Only the definitions the function needs: a script's top-level grade call (or anything
        # else it runs) is not shipped, so grading a script never grades it again.
        with open(filename, encoding="utf-8") as f:
            return extract([f.read()], entry, also), entry
    cells = _ipython_cells()
    if cells is None:
        try:
            return inspect.getsource(fn), entry
        except (OSError, TypeError):
            raise SourceError(f"cannot find the source of {entry}; define it in a notebook cell or a .py file") from None
    return extract(cells, entry, also), entry


def _class_code(cls):
    """The code object of a method the class body defines: it says which file or cell the class is in."""
    for value in vars(cls).values():
        function = getattr(value, "__func__", value)
        code = getattr(function, "__code__", None)
        if code is not None:
            return code
    return None
