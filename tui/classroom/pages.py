"""The web side of a class: the class's page at `/` (read-only), the lecturer's under a
secret path, their WebSockets, and the browser's terminal (xterm.js, shipped in this
package: never fetched from a CDN).

What a page's socket carries: from here, the screen's bytes (binary) and now and then the
count of viewers (JSON text); from the lecturer's page only, its keys as
`["stdin", "..."]`. What a class page sends is read and thrown away.
"""

from __future__ import annotations

import html
import json
import re
import secrets
from collections.abc import Callable
from importlib import resources

from aiohttp import WSMsgType, web

from crawlscope.engine.remote.monitor import page_refusal

from .cuts import whole_keys
from .pty_screen import MAX_PENDING_KEYS
from .relay import Relay, Viewer

# A paste of as many keys as the screen holds pending (pty_screen.py), each written the
# longest JSON writes one (\u001b: 6 bytes for the ESC of every escape sequence); more is
# refused by the socket. 64 KiB took a 34 KB paste of escape sequences, and closed it.
MAX_KEYS_MESSAGE = 6 * MAX_PENDING_KEYS + 64
STATIC = ("xterm.js", "xterm.css", "page.js", "LICENSE")
TYPES = {".js": "text/javascript", ".css": "text/css"}


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


class Pages:
    """The class's pages for one relay; `keys` takes what the lecturer types."""

    def __init__(
        self,
        relay: Relay,
        cols: int,
        rows: int,
        keys: Callable[[bytes], None],
        allow_origins: frozenset[str] = frozenset(),
        title: str = "crawlscope",
    ) -> None:
        self.relay = relay
        self.cols, self.rows = cols, rows
        self.keys = keys
        self.allow_origins = allow_origins
        self.title = title
        self.key = secrets.token_urlsafe(16)  # the lecturer's path: never logged, never shown
        self.files = {name: _static(name) for name in STATIC}

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._class_page)
        app.router.add_get("/ws", self._class_socket)
        app.router.add_get("/lecturer/{key}/", self._lecturer_page)
        app.router.add_get("/lecturer/{key}/ws", self._lecturer_socket)
        app.router.add_get("/static/{name}", self._file)
        return app

    @property
    def lecturer_path(self) -> str:
        return f"/lecturer/{self.key}/"

    def _is_lecturer(self, request: web.Request) -> None:
        given = request.match_info["key"].encode()
        if not secrets.compare_digest(given, self.key.encode()):
            raise web.HTTPNotFound()

    async def _file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = self.files.get(name)
        if body is None:
            raise web.HTTPNotFound()
        kind = next((t for ext, t in TYPES.items() if name.endswith(ext)), "text/plain")
        return web.Response(body=body, content_type=kind, charset="utf-8")

    async def _class_page(self, request: web.Request) -> web.Response:
        return self._page(lecturer=False)

    async def _lecturer_page(self, request: web.Request) -> web.Response:
        self._is_lecturer(request)
        return self._page(lecturer=True)

    def _page(self, lecturer: bool) -> web.Response:
        settings = {
            "cols": self.cols, "rows": self.rows, "lecturer": lecturer,
            "viewers": len(self.relay.viewers),
        }  # fmt: skip
        role = "lecturer: your keys steer" if lecturer else "read-only"
        page = PAGE.format(
            title=html.escape(self.title + (" (lecturer)" if lecturer else "")),
            role=role,
            settings=html.escape(json.dumps(settings)),
        )
        # No referrer: the lecturer's path must not leave in a header to anywhere.
        headers = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
        return web.Response(text=page, content_type="text/html", headers=headers)

    async def _class_socket(self, request: web.Request) -> web.StreamResponse:
        return await self._socket(request, lecturer=False)

    async def _lecturer_socket(self, request: web.Request) -> web.StreamResponse:
        self._is_lecturer(request)
        return await self._socket(request, lecturer=True)

    async def _socket(self, request: web.Request, lecturer: bool) -> web.StreamResponse:
        refusal = page_refusal(request, self.allow_origins, "this class", "the class page's")
        if refusal is not None:
            raise web.HTTPForbidden(text=refusal)
        if not lecturer and self.relay.full:  # the lecturer always gets in
            limit = self.relay.limits.max_viewers
            raise web.HTTPServiceUnavailable(
                text=f"this class is full ({limit} viewers, --max-viewers); try again later\n"
            )
        # No permessage-deflate: the screen's frames are built once for every viewer
        # (relay.frame), and compressing them would take a compressor for each.
        ws = web.WebSocketResponse(max_msg_size=MAX_KEYS_MESSAGE, heartbeat=20.0, compress=False)
        await ws.prepare(request)
        viewer = Viewer(ws, request.transport, lecturer, request.remote or "?")
        self.relay.join(viewer)
        try:
            async for message in ws:
                if lecturer and message.type is WSMsgType.TEXT:
                    self._typed(message.data)
        finally:
            self.relay.leave(viewer)
        return ws

    def _typed(self, text: str) -> None:
        """A lecturer's message: `["stdin", KEYS]`; anything else is ignored. Its size is
        bounded by the socket (MAX_KEYS_MESSAGE), its nesting here before it is parsed:
        one list, so 30,000 `[` cost a scan, not the parser's recursion."""
        if _nested(text) > 1:
            return
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return
        if (
            isinstance(message, list)
            and len(message) == 2
            and message[0] == "stdin"
            and isinstance(message[1], str)
        ):
            self.keys(whole_keys(message[1].encode("utf-8", "replace")))


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _nested(text: str) -> int:
    """How many lists and objects `text` opens outside its strings (an upper bound of how
    deep it nests)."""
    bare = _STRING.sub("", text)
    return bare.count("[") + bare.count("{")


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<link rel="stylesheet" href="/static/xterm.css">
<style>
  html, body {{ margin: 0; height: 100%; background: #000; color: #ccc;
               font-family: sans-serif; overflow: hidden; }}
  #bar {{ height: 24px; line-height: 24px; padding: 0 8px; font-size: 14px;
          background: #222; white-space: nowrap; }}
  #screen {{ position: absolute; top: 24px; left: 0; right: 0; bottom: 0;
             display: flex; align-items: center; justify-content: center; }}
</style>
</head>
<body>
<div id="bar">crawlscope &middot; <span id="role">{role}</span> &middot;
<span id="count">0</span> browsers watching<span id="state"></span></div>
<div id="screen" data-settings="{settings}"></div>
<script src="/static/xterm.js"></script>
<script src="/static/page.js"></script>
</body>
</html>
"""
