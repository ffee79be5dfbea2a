"""What a lecture's app serves for as long as it runs (the lecture's monitor): the stages'
app and stage 3's alike, each run of them on a loop of its own."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

Service = AbstractAsyncContextManager[object]


class Services:
    def __init__(self, services: Sequence[Service] = ()) -> None:
        self._services = tuple(services)
        self._stack = contextlib.AsyncExitStack()

    async def start(self) -> str | None:
        """Enter each service, on the app's loop; None once all run, else why one cannot."""
        try:
            for service in self._services:
                await self._stack.enter_async_context(service)
        except OSError as exc:
            return f"cannot start: {exc}"
        return None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()
