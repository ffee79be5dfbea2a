"""The engine never imports the UI: importing all of it pulls in neither textual nor rich.
The command line imports it only in the commands that draw, when they do."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import crawlscope.engine


def engine_modules() -> list[str]:
    # walk_packages, not iter_modules: a subpackage's modules must be covered too, or a
    # UI import in engine/lecture/ would pass unseen.
    prefix = crawlscope.engine.__name__ + "."
    return [info.name for info in pkgutil.walk_packages(crawlscope.engine.__path__, prefix)]


def test_the_walk_reaches_every_subpackage() -> None:
    modules = engine_modules()
    for name in ("introspect", "lecture.stage_generators", "trace.replay", "sites.hostile"):
        assert f"crawlscope.engine.{name}" in modules


def ui_after_importing(modules: list[str]) -> list[str]:
    """The UI modules a fresh interpreter holds after importing `modules` (this test
    process has imported textual already)."""
    script = "\n".join(
        [
            "import importlib, sys",
            *(f"importlib.import_module({name!r})" for name in modules),
            "ui = ('textual', 'rich', 'textual_serve')",
            "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in ui)))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.split()


def test_importing_the_whole_engine_imports_no_ui() -> None:
    assert ui_after_importing(engine_modules()) == []


def test_the_command_line_imports_the_screen_only_to_draw() -> None:
    # Every module of crawlscope.cli, imported: Textual, Rich and textual-serve come only
    # inside the functions of the commands that draw, never with a module.
    import crawlscope.cli

    prefix = crawlscope.cli.__name__ + "."
    modules = [info.name for info in pkgutil.walk_packages(crawlscope.cli.__path__, prefix)]
    assert f"{prefix}crawl" in modules and f"{prefix}headless" in modules
    assert ui_after_importing(modules) == []
