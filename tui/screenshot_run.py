"""Running an app headless to the scene a steer brings it to, and saving its screen.

What `tui --screenshot`, `lecture --screenshot`, the docs' scenes (screenshots.py) and
the cluster's (cluster_screenshot.py) share: here, so that the scenes import it and not
each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from .app import CrawlScopeApp

Steer = Callable[[Pilot[Any], CrawlScopeApp], Awaitable[None]]
LectureSteer = Callable[[Pilot[Any]], Awaitable[None]]


def take_screenshot(
    app: CrawlScopeApp,
    path: str | Path,
    after: float,
    size: tuple[int, int] = (120, 40),
    steer: Steer | None = None,
) -> Path:
    """Run `app` headless at `size`, let it crawl `after` seconds, run `steer`, then save
    an SVG of the screen to `path` and quit. Returns the path written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    async def pilot(p: Pilot[Any]) -> None:
        await p.pause(after)
        if steer is not None:
            await steer(p, app)
        await p.pause(0.3)  # a few frames, so the screen shows the last step
        app.save_screenshot(filename=target.name, path=str(target.parent))
        await app.action_quit()

    app.run(headless=True, size=size, auto_pilot=pilot)
    return target


def shoot_app(app: App[Any], target: Path, size: tuple[int, int], steer: LectureSteer) -> Path:
    """Run `app` headless, let `steer` bring it to the scene, save an SVG, and close."""
    target.parent.mkdir(parents=True, exist_ok=True)

    async def pilot(p: Pilot[Any]) -> None:
        await steer(p)
        await p.pause(0.3)
        app.save_screenshot(filename=target.name, path=str(target.parent))
        app.exit()

    app.run(headless=True, size=size, auto_pilot=pilot)
    return target
