"""No import circles in crawlscope: every import counts, at a module's top, inside a function
or under TYPE_CHECKING alike. A circle that works today (a lazy import, a type-only one) still
means two modules that cannot be read, tested or moved one without the other.

The one exception is a package's __init__ loading its own modules by name on first use
(engine/__init__.py's `_HOMES`): that is a string, not an import, so the scan never sees it."""

from __future__ import annotations

import ast
from pathlib import Path

import crawlscope
import crawlscope.engine
import crawlscope.tui

# Where each package's source lives (pyproject's package-dir): the engine and the TUI are
# folders beside crawlscope/, installed under its name.
ROOTS = {
    "crawlscope": Path(crawlscope.__file__).parent,
    "crawlscope.engine": Path(crawlscope.engine.__file__).parent,
    "crawlscope.tui": Path(crawlscope.tui.__file__).parent,
}


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The crawlscope modules `name` imports anywhere in its code. `from pkg import x` is an
    import of pkg.x when x is a module, else of pkg."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        found.update(target for target in targets if target in known and target != name)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative: the graph has hundreds of modules, and recursion would make the depth of
    Python's stack a limit of the test)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_finder_finds_a_circle_and_only_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set(), "f": {"f"}}
    assert circles(edges) == [["a", "b", "c"]]


def test_the_scan_reads_every_kind_of_import() -> None:
    edges = graph()
    assert len(edges) > 150
    # A module-level import, a relative one, a `from package import module` and one made
    # inside a function: each is an edge of the graph.
    assert "crawlscope.engine.ledger" in edges["crawlscope.engine.crawler"]
    assert "crawlscope.engine.timing.collector" in edges["crawlscope.engine.crawler"]
    assert "crawlscope.cli.attach" in edges["crawlscope.cli"]
    assert "crawlscope.tui.screenshot_run" in edges["crawlscope.cli.procs"]


def test_no_module_imports_itself_through_others() -> None:
    found = circles(graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)
