"""The grader's modules import each other without cycles (lazy imports inside functions included),
and importing the package and its registry changes nothing: no CUDA context, no patched Triton."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, wherever in the file the import is."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rsplit(".", 1)[0]
            target = f"{base}.{node.module}" if node.level and node.module else (base if node.level else node.module or "")
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found.update(c for c in candidates if c.startswith("autograder"))
    return found


def _graph() -> dict[str, set[str]]:
    # A problem's submissions/ holds learner files kept as test data (tests/adversarial/cases.py), not modules.
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "submissions" not in p.relative_to(PACKAGE).parts}
    # "autograder.problems" as a package is its __init__; imports of a parent package are not edges
    # to its children.
    return {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_of_the_grader_imports_itself_back():
    graph = _graph()
    assert "autograder.notebooks" in graph["autograder.cli"] and "autograder.problems" in graph["autograder.registry"]
    cycle = _cycle({k: {m for m in v if not k.startswith(m + ".")} for k, v in graph.items()})
    assert cycle is None, " -> ".join(cycle)


def test_importing_the_registry_starts_no_cuda_and_patches_no_triton():
    code = (
        "import torch\n"
        "from autograder import registry\n"
        "problems = registry.all_problems()\n"
        "import triton.runtime.interpreter as interpreter\n"
        "patched = getattr(interpreter.InterpreterBuilder.create_dot, '_bf16_widened', False)\n"
        "print(len(problems), torch.cuda.is_initialized(), patched)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True).stdout.split()
    assert int(out[0]) > 10 and out[1:] == ["False", "False"]
