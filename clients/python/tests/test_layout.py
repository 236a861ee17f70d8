"""The package's modules import one another without a circle: every
import counts, at the top, under ``TYPE_CHECKING`` or inside a function,
so each module can be read (and changed) before the ones that use it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "raftlock"


def imports_of(path: Path) -> set[str]:
    """The ``raftlock.*`` modules ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "raftlock":
                # `from raftlock import asyncio`: a module, the native
                # extension (which imports nothing), or a name of the
                # package itself.
                for alias in node.names:
                    module = f"raftlock.{alias.name}"
                    if module_file(module):
                        found.add(module)
                    elif alias.name != "_native":
                        found.add("raftlock")
            elif node.module.startswith("raftlock."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "raftlock")
    return found


def module_file(module: str) -> Path | None:
    path = PACKAGE / (module.removeprefix("raftlock.") + ".py")
    return path if path.exists() else None


def edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        module = "raftlock" if path.stem == "__init__" else f"raftlock.{path.stem}"
        graph[module] = {m for m in imports_of(path) if m != module and m != "raftlock._native"}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for imported in sorted(graph.get(module, ())):
            circle = visit(imported, [*path, module])
            if circle:
                return circle
        done.add(module)
        return None

    for module in sorted(graph):
        circle = visit(module, [])
        if circle:
            return circle
    return None


def test_no_module_of_the_package_is_in_a_circle_of_imports() -> None:
    circle = find_circle(edges())
    assert circle is None, " -> ".join(circle or [])


def test_the_circle_check_finds_a_circle() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None
