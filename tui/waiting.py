"""Waiting for a condition, with a deadline: how the screenshots and the tests drive an app
they cannot see inside, never by sleeping a guessed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def wait_until(
    condition: Callable[[], object],
    what: str,
    *,
    timeout: float = 60.0,
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
    poll: float = 0.02,
    describe: Callable[[], str] | None = None,
) -> None:
    """Return once `condition()` is true; raise TimeoutError naming `what` (and the state
    `describe()` gives) if it is not within `timeout` seconds. `pause` is how to let the
    loop run meanwhile: asyncio.sleep, or a Textual pilot's pause."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            state = f" ({describe()})" if describe is not None else ""
            raise TimeoutError(f"timed out waiting for: {what}{state}")
        await pause(poll)
