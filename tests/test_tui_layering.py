"""The engine never imports the UI: importing all of it pulls in neither textual nor rich."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import crawlscope.engine


def test_importing_the_whole_engine_imports_no_ui() -> None:
    modules = [
        f"crawlscope.engine.{info.name}"
        for info in pkgutil.iter_modules(crawlscope.engine.__path__)
    ]
    assert "crawlscope.engine.introspect" in modules
    # A fresh interpreter: this test process has imported textual already.
    script = "\n".join(
        [
            "import importlib, sys",
            *(f"importlib.import_module({name!r})" for name in modules),
            "ui = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))",
            "print(ui)",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
