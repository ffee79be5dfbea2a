"""The docs' pictures, made by the screenshot command as the site is built (as Textual's docs
make theirs): each scene runs the real app headless (tui/screenshots.py), so a page always
shows what the code draws today, never a picture from an older screen.

About 70 s on 2 cores. For a quick local build of the text, point
CRAWLSCOPE_DOCS_SCREENSHOTS at a folder made earlier by the same command; CI never does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

_made: Path | None = None  # made once a process: `mkdocs serve` rebuilds on every edit


def _folder() -> Path:
    global _made
    given = os.environ.get("CRAWLSCOPE_DOCS_SCREENSHOTS")
    if given:
        return Path(given)
    if _made is None:
        _made = Path(tempfile.mkdtemp(prefix="crawlscope-docs-screenshots-"))
        command = [sys.executable, "-m", "crawlscope.tui.screenshots", str(_made)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return _made


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    for path in sorted(_folder().iterdir()):
        files.append(File.generated(config, f"screenshots/{path.name}", abs_src_path=str(path)))
    return files


def on_shutdown(**_: Any) -> None:
    if _made is not None:
        shutil.rmtree(_made, ignore_errors=True)
