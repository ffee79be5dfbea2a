"""Where a crawl's time goes: a pyinstrument profile summed into categories and top functions."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.common import REPO

if TYPE_CHECKING:
    from pyinstrument.frame import Frame

_ENGINE = str(REPO / "engine") + "/"
_TUI = str(REPO / "tui") + "/"
IDLE = "waiting in select() (idle)"
TUI_TICK = "crawlscope TUI (_tick: snapshot, widget updates)"
TEXTUAL = "Textual + Rich (layout, render, compositor)"
_BENCH = str(REPO / "bench") + "/"

# A sample belongs to the outermost third-party library on its stack, so yarl called by
# aiohttp counts as aiohttp and the builder code that bs4 calls back counts as parsing; a
# sample in no library goes to the innermost frame that matches a rule below, so urllib
# called by the engine's normalize() counts as URL handling and the loop only gets the
# time spent in the loop itself.
_LIBRARIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("parsing (bs4 + lxml)", ("/bs4/", "/lxml/", "/soupsieve/")),
    (
        "aiohttp (HTTP client)",
        (
            "/aiohttp/",
            "/multidict/",
            "/propcache/",
            "/aiohappyeyeballs/",
            "/frozenlist/",
            "/aiosignal/",
        ),
    ),
    ("URL handling (yarl, urllib, normalize, scope)", ("/yarl/",)),
)
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (IDLE, ("selectors.py:select",)),
    ("parsing (bs4 + lxml)", (_ENGINE + "links.py", "/encodings/", "codecs.py")),
    (
        "URL handling (yarl, urllib, normalize, scope)",
        (_ENGINE + "urls.py", "urllib/parse.py", "ipaddress.py"),
    ),
    ("crawlscope engine (crawler, records, state)", (_ENGINE,)),
    ("baseline crawl loop", (_BENCH + "baseline.py",)),
    ("asyncio event loop and sockets", ("/asyncio/", "selectors.py", "socket.py")),
)


def _match(frame: Frame, rules: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    where = f"{frame.file_path or ''}:{frame.function}"
    for name, needles in rules:
        if any(n in where for n in needles):
            return name
    return None


def _category(frame: Frame) -> str:
    stack: list[Frame] = []
    node: Frame | None = frame
    while node is not None:
        stack.append(node)
        node = node.parent
    # The TUI's own frame code, and whatever Textual it calls, is the app's per-frame work;
    # Textual anywhere else is drawing the screen.
    paths = [node.file_path or "" for node in stack]
    if any(path.startswith(_TUI) for path in paths):
        return TUI_TICK
    if any("/textual/" in path or "/rich/" in path for path in paths):
        return TEXTUAL
    for node in reversed(stack):  # outermost first
        library = _match(node, _LIBRARIES)
        if library is not None:
            return library
    for node in stack:  # innermost first
        name = _match(node, _RULES)
        if name is not None:
            return name
    return "other (stdlib, interpreter)"


@dataclass
class ProfileSummary:
    seconds: float
    categories: dict[str, float]  # category -> share of the profile (0..1)
    top: list[tuple[str, float]]  # "function (file:line)" -> share of self time

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "categories": self.categories,
            "top_self_time": [{"function": f, "share": s} for f, s in self.top],
        }


Seconds = defaultdict[str, float]  # name -> seconds of self time


def _most_first(seconds: Seconds) -> list[tuple[str, float]]:
    return sorted(seconds.items(), key=lambda item: item[1], reverse=True)


def _walk(frame: Frame, by_category: Seconds, by_function: Seconds) -> None:
    own = frame.total_self_time
    if own > 0 and not frame.is_synthetic:
        by_category[_category(frame)] += own
        short = (frame.file_path or "?").replace(str(REPO) + "/", "")
        for marker in ("site-packages/", "lib/python3.11/"):
            if marker in short:
                short = short.split(marker, 1)[1]
        by_function[f"{frame.function} ({short}:{frame.line_no})"] += own
    for child in frame.children:
        _walk(child, by_category, by_function)


def available() -> bool:
    """pyinstrument is a benchmark tool, not a dependency: without it there is no profile."""
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        return False
    return True


def profile(make: Callable[[], Awaitable[object]], top: int = 15) -> ProfileSummary:
    """Run the coroutine `make()` builds under a sampling profiler, on a fresh loop."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005, async_mode="disabled")
    profiler.start()
    try:
        asyncio.run(make())  # type: ignore[arg-type]
    finally:
        profiler.stop()
    session = profiler.last_session
    assert session is not None, "the profiler recorded nothing"
    root = session.root_frame()
    by_category: Seconds = defaultdict(float)
    by_function: Seconds = defaultdict(float)
    if root is not None:
        _walk(root, by_category, by_function)
    total = sum(by_category.values()) or 1.0
    return ProfileSummary(
        seconds=total,
        categories={k: v / total for k, v in _most_first(by_category)},
        top=[(k, v / total) for k, v in _most_first(by_function)[:top]],
    )
