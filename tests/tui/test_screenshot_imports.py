"""The screenshot tooling imports in one direction: the scenes import the shared runner
(tui/screenshot_run.py), never each other, so no module of it reaches itself again, not
even through an import put off into a function."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil

import crawlscope.tui

SCREENSHOT_MODULES = (
    "crawlscope.tui.screenshots",
    "crawlscope.tui.cluster_screenshot",
    "crawlscope.tui.remote_screenshot",
    "crawlscope.tui.screenshot_run",
)


def tui_modules() -> set[str]:
    prefix = crawlscope.tui.__name__ + "."
    found = {info.name for info in pkgutil.walk_packages(crawlscope.tui.__path__, prefix)}
    return found | {crawlscope.tui.__name__}


def imported_by(name: str, known: set[str]) -> set[str]:
    """The crawlscope.tui modules `name` imports anywhere in its text, at the top or in
    a function."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    is_package = spec.submodule_search_locations is not None
    package = name if is_package else name.rpartition(".")[0]
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out & known


def test_no_screenshot_module_imports_itself_round_a_circle() -> None:
    known = tui_modules()
    assert set(SCREENSHOT_MODULES) <= known
    graph = {name: imported_by(name, known) for name in known}
    for start in SCREENSHOT_MODULES:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
        assert start not in seen, f"{start} imports itself back"
