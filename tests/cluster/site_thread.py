"""A real aiohttp site in a thread of its own, for tests that run crawlscope as a command
beside it: the subclass adds its routes; `url` is its first page once `ready` is set."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from aiohttp import web


class SiteThread(threading.Thread):
    first_path = "/"

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.url = ""
        self.ready = threading.Event()
        self._stop_it: Callable[[], object] | None = None

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        app = web.Application()
        self.routes(app)
        runner = web.AppRunner(app)
        await runner.setup()
        tcp = web.TCPSite(runner, "127.0.0.1", 0)
        await tcp.start()
        port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}{self.first_path}"
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._stop_it = lambda: loop.call_soon_threadsafe(stop.set)
        self.ready.set()
        await stop.wait()
        await runner.cleanup()

    def stop(self) -> None:
        if self._stop_it is not None:
            self._stop_it()
        self.join(timeout=10)
