"""The trainer's modules import each other without a circle, counting the imports made only
for type annotations (`if TYPE_CHECKING:`) and those inside functions: a circle there is a
design that only works by the order of imports."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dreamgym_trainer"


def relative_imports(path: Path) -> set[str]:
    """The package's modules that `path` imports (`from .x import y`, `from . import x`)."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                imported.add(node.module.split(".")[0])
            else:
                imported.update(alias.name for alias in node.names)
    return imported


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of `graph` as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for other in sorted(graph.get(module, ())):
            if state.get(other) == "open":
                return path[path.index(other) :] + [other]
            if other not in state:
                found = visit(other)
                if found:
                    return found
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_the_trainer_modules_form_no_import_circle():
    graph = {path.stem: relative_imports(path) for path in PACKAGE.glob("*.py")}
    assert "policy_model" in graph and graph["policy_model"] >= {"policy_update", "trainer_state"}
    assert find_circle(graph) is None, " -> ".join(find_circle(graph) or [])


def test_the_check_finds_a_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
