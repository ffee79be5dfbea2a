"""Serve a crawl's observation to any number of viewers, and its controls to the one
who holds the token, over an aiohttp WebSocket.

The crawl never waits for a viewer. The monitor samples the observed crawl at a fixed
rate, once, encodes that frame once, and hands the same text to every viewer's queue; a
viewer with too many bytes waiting for it (in that queue, the transport's buffer and the
kernel's), or that has been behind for too long, is dropped there and then. Nothing is
sampled while nobody watches.

Nor are the crawl's own sockets ever starved by viewers: the monitor accepts connections
itself, one at a time, holds at most `max_viewers` of them (fewer when the process may
not open that many files), refuses the rest at once with a 503, and closes any connection
that has not become a WebSocket within a few seconds. A browser page may watch only from
the monitor's own origin or one the user allowed (ViewerLimits).

Steering is a short list of controls with typed arguments (protocol.py); none takes a
URL or a path, so no viewer can make the crawl fetch or read anything. Input that is not
one of them, from a viewer without the token, too big or too frequent, gets an error
message to that viewer and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import json
import math
import os
import re
import secrets
import socket
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from aiohttp import WSCloseCode, WSMsgType, hdrs, web

from ..exchange.config_json import config_to_plain
from ..hosts.controls import host_control
from ..observe.contract import CrawlControls, ObservedCrawl
from ..observe.snapshot import Snapshot
from ..records import FetchRecord
from ..redirects import MAX_CHAINS, MAX_HOPS
from ..trace.events import to_event
from ..trace.flight import FlightRing
from .limits import DEFAULT_LIMITS, ViewerLimits, origin_of

# The limits live apart so that a command line can show them without loading aiohttp.
from .limits import MAX_BEHIND_BYTES as MAX_BEHIND_BYTES
from .protocol import (
    MAX_VIEW,
    PATH,
    TOKEN_PARAM,
    VERSION,
    VIEWER_PARAM,
    chain_to_plain,
    record_to_plain,
    snapshot_to_plain,
)

FRAMES_PER_SECOND = 15.0
# The kernel's send buffer for a viewer's socket (Linux doubles it): small, so that what a
# viewer that stops reading costs shows in the transport's buffer, where it is counted,
# instead of megabytes hidden in an auto-tuned kernel buffer.
VIEWER_SNDBUF = 64 * 1024
BACKLOG = 1024  # connections the kernel holds for the monitor to accept (it may cap it)
ACCEPT_PAUSE = 0.5  # seconds between tries to accept when the process is out of files
MAX_MESSAGE = 4096  # bytes; a control is a few dozen
# Messages a viewer may send: RATE a second, in bursts of up to BURST. Past that each one
# is refused, and a viewer that keeps flooding past FLOOD_LIMIT refusals is dropped.
RATE = 10.0
BURST = 20.0
FLOOD_LIMIT = 200
MAX_SLOWMO = 10.0  # seconds; what the s key offers is at most 1
# Frames that carry the workers' rows, one in this many (5 a second at 15 frames a
# second: the rate the workers table redraws at, tui/screens/panels.py). Those rows are
# most of a frame, and their "suspended at" costs a walk of each task; the figures,
# fetches and chains in between go at the full rate.
WORKERS_EVERY = 3
RECENT_WINDOW = 256  # fetches a new viewer is sent at once (the crawler keeps as many)
# Flight recorder events a frame carries at most: 15 frames a second of these is 60,000
# events a second, some 10,000 pages a second, more than one process crawls.
MAX_EVENTS = 4000
CLOSE_WAIT = 1.0  # seconds the last frame may take to reach the viewers on closing

# Each control's arguments: name -> (type, required). "worker" must name a worker the
# crawl has; "seconds" must be a number from 0 to MAX_SLOWMO.
CONTROLS: dict[str, dict[str, bool]] = {
    "pause_all": {},
    "resume_all": {},
    "pause": {"worker": True},
    "resume": {"worker": True},
    "cancel_worker": {"worker": True},
    "add_worker": {},
    "remove_worker": {"worker": False},
    "set_slowmo": {"seconds": True},
    "stop": {},
    "block_host": {"host": True},
    "unblock_host": {"host": True},
    "set_host_delay": {"host": True, "seconds": True},
    "set_host_limit": {"host": True, "limit": True},
}


VIEWER_NAME = re.compile(r"[0-9A-Za-z.:_-]{1,64}")
RELAY = "class-screen"  # the ?viewer= name of serve's screen, which browsers watch


class Refused(ValueError):
    """A message from a viewer that is not acted on; the text goes back to that viewer."""


def parse_address(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """`[HOST:]PORT` (an IPv6 host in brackets) as (host, port); ValueError says why not."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host = default_host
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"put an IPv6 address in brackets: [{host}]:{port_text}")
    if not host:
        host = default_host
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"not a port number: {port_text!r} (use [HOST:]PORT)") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be from 0 to 65535, not {port}")
    return host, port


def listen(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free one); OSError if it cannot be had. Bound
    before anything starts, so its URL can be printed and a taken port is a clear error."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # A burst of connections waits in the kernel, which costs no file, until the
        # monitor accepts (or refuses) each; a short backlog would drop some unanswered.
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def socket_url(sock: socket.socket, token: str | None, path: str = PATH) -> str:
    """The WebSocket URL of a monitor listening on `sock`, with the token if given."""
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        host = socket.gethostname()  # listening everywhere: name a way in, not "any"
    if ":" in host:
        host = f"[{host}]"
    url = f"ws://{host}:{port}{path}"
    return url if token is None else f"{url}?{TOKEN_PARAM}={quote(token)}"


def file_limit() -> int | None:
    """The files this process may open (RLIMIT_NOFILE's soft limit), if it is known."""
    try:
        import resource
    except ImportError:  # not on this system
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def open_files() -> int:
    """Files this process has open now (0 where the system does not say)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def viewer_room(wanted: int) -> int:
    """How many connections the monitor holds at most: `wanted`, but never more than half
    of the files the process may still open, so that the crawl keeps the other half."""
    limit = file_limit()
    if limit is None:
        return wanted
    return max(1, min(wanted, (limit - open_files()) // 2))


@dataclass(eq=False)
class Viewer:
    ws: web.WebSocketResponse
    address: str
    steer: bool
    transport: asyncio.Transport | None
    queue: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    queued: int = 0  # bytes of text in `queue`
    behind_since: float | None = None  # since when something has waited for it always
    fresh: bool = True  # no frame yet: the next one carries the whole recent window
    tokens: float = BURST
    refilled_at: float = field(default_factory=time.monotonic)
    refused: int = 0  # messages refused for the rate in a row
    shows: frozenset[int] = frozenset()  # the workers whose rows it draws ("view")
    closing: asyncio.Task[None] | None = None  # its dismissal, once it has one
    sender: asyncio.Task[None] | None = None

    def waiting(self) -> int:
        """Bytes waiting for this viewer in the process: its queue and the transport's
        buffer. (Not the kernel's: on a long link some is always in flight there.)"""
        transport = self.transport
        if transport is None or transport.is_closing():
            return self.queued
        return self.queued + transport.get_write_buffer_size()

    def behind(self) -> int:
        """Bytes waiting for this viewer here, the kernel's send queue included."""
        transport = self.transport
        kernel = 0 if transport is None or transport.is_closing() else kernel_queue(transport)
        return self.waiting() + kernel


def kernel_queue(transport: asyncio.BaseTransport) -> int:
    """Bytes in the kernel's send queue of `transport`'s socket (0 where not known)."""
    sock = transport.get_extra_info("socket")
    if sock is None or _SIOCOUTQ is None:
        return 0
    try:
        raw = fcntl.ioctl(sock.fileno(), _SIOCOUTQ, b"\0\0\0\0")
    except OSError:
        return 0
    return int.from_bytes(raw, sys.byteorder, signed=True)


try:
    import fcntl
    import termios

    _SIOCOUTQ: int | None = termios.TIOCOUTQ  # the same request for a socket, on Linux
except (ImportError, AttributeError):
    _SIOCOUTQ = None


class _Door(asyncio.Protocol):
    """One accepted connection, handed to aiohttp's protocol `inner`: counted while it
    is open, and closed when it has not become a viewer in time."""

    def __init__(self, monitor: Monitor, inner: asyncio.Protocol) -> None:
        self.monitor = monitor
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.monitor._doors[transport] = self
        self.timer = asyncio.get_running_loop().call_later(
            self.monitor.limits.handshake_seconds, transport.abort
        )
        self.inner.connection_made(transport)

    def upgraded(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.monitor._left(self)
        self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


_REFUSED = b"too many viewers; try again later\n"
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_REFUSED), _REFUSED)
)


class Monitor:
    """Serve `observed` (and `controls`, to holders of the token) on a listening socket."""

    path = PATH  # where viewers connect (a lecture's monitor serves another kind of frame)

    def __init__(
        self,
        observed: ObservedCrawl | None,
        controls: CrawlControls | None,
        sock: socket.socket,
        *,
        fps: float = FRAMES_PER_SECOND,
        token: str | None = None,
        workers_every: int = WORKERS_EVERY,
        limits: ViewerLimits = DEFAULT_LIMITS,
        past: FlightRing | None = None,
    ) -> None:
        self._observed = observed
        # The flight recorder's ring: each frame carries the events added since the one
        # before, so a viewer keeps a recent past of its own (timeline, rewind).
        self._past = past
        self._past_seen = past.added if past is not None else 0
        self.limits = limits
        self.controls = controls
        self.token = token or secrets.token_urlsafe(18)
        self.sock = sock
        # Read from the socket now: a screen still names the monitor after it has closed.
        self._urls = (socket_url(sock, self.token, self.path), socket_url(sock, None, self.path))
        self.period = 1.0 / fps
        self.workers_every = workers_every
        self.dropped = 0  # viewers dropped for falling behind or flooding
        self.frames = 0  # frames sampled
        # Seconds of the loop spent sampling, encoding and sending frames: what watching
        # costs the crawl, measured where it is spent (bench/viewers.py reports it).
        self.busy_seconds = 0.0
        self._viewers: list[Viewer] = []
        self._window: deque[dict[str, Any]] = deque(maxlen=RECENT_WINDOW)
        self._last_record: FetchRecord | None = None
        self._chains_key: tuple[int, int] | None = None
        self._chains: dict[str, Any] = {}
        self._chains_changed = False
        self._runner: web.AppRunner | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._doorman: asyncio.Task[None] | None = None
        self._closing = False
        # Every connection open now, WebSocket or not yet, and how many there may be.
        self._doors: dict[asyncio.Transport, _Door] = {}
        self._admitted = 0  # accepted, and not yet gone (some not yet in _doors)
        self.room = limits.max_viewers  # set on start, from the file limit then
        self.refused = 0  # connections refused at the door: too many, or out of files
        self._out_of_files_said = False
        # The browsers a relaying screen shows the crawl in (serve sets it).
        self.relayed: Callable[[], list[str]] | None = None

    @property
    def observed(self) -> ObservedCrawl:
        """The crawl served. Only a monitor of something else (a lecture's, which sends
        frames of its own) has none, and it never samples one."""
        if self._observed is None:
            raise TypeError(f"{type(self).__name__} serves no crawl")
        return self._observed

    @property
    def url(self) -> str:
        """The URL that can steer (it carries the token)."""
        return self._urls[0]

    @property
    def view_url(self) -> str:
        """The same crawl, read-only."""
        return self._urls[1]

    @property
    def viewers(self) -> list[str]:
        """The address of every viewer connected now. A screen shown to browsers (serve's,
        named RELAY) is not one: the browsers it is shown in are, from `relayed`."""
        if self.relayed is None:
            return [v.address for v in self._viewers]
        own = [v.address for v in self._viewers if not v.address.startswith(f"{RELAY} via ")]
        return [*self.relayed(), *own]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get(self.path, self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=CLOSE_WAIT)
        await self._runner.setup()
        self.room = viewer_room(self.limits.max_viewers)
        self._doorman = asyncio.create_task(self._accept_forever(), name="monitor-doorman")
        self._sampler = asyncio.create_task(self._sample_forever(), name="monitor-sampler")

    async def close(self) -> None:
        """Send the last state to every viewer (briefly), then close their connections."""
        if self._closing:
            return
        self._closing = True
        for task in (self._doorman, self._sampler):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.sock.close()
        if self._viewers:
            self._broadcast(rows=True)  # the crawl's end, so a viewer keeps its last state
        viewers = list(self._viewers)
        for viewer in viewers:
            viewer.queue.put_nowait(None)  # the sender's sign to stop
        senders = [v.sender for v in viewers if v.sender is not None]
        if senders:
            await asyncio.wait(senders, timeout=CLOSE_WAIT)
        for viewer in viewers:
            await self._close_viewer(viewer, WSCloseCode.GOING_AWAY, "the crawl has gone")
        if self._runner is not None:
            await self._runner.cleanup()
        for transport in list(self._doors):  # not yet viewers: nothing to say to them
            transport.abort()

    # ---- the door ----------------------------------------------------------------------

    @property
    def connections(self) -> int:
        """Connections the monitor holds now, WebSocket or not yet."""
        return self._admitted

    async def _accept_forever(self) -> None:
        """Accept connections one at a time: each either joins (and has a few seconds to
        become a WebSocket) or is told at once there is no room, so the monitor never
        holds more than `room` of the process's files."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _peer = await loop.sock_accept(self.sock)
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    _say(f"the monitor accepts no more viewers: {exc.strerror or exc}")
                    return
                # The process is out of files (not through the viewers): whoever waits
                # in the backlog waits; the crawl's own sockets go first.
                self.refused += 1
                if not self._out_of_files_said:
                    self._out_of_files_said = True
                    _say(
                        f"the process is out of files ({exc.strerror}); viewers of the "
                        "monitor wait until some close (said once)"
                    )
                await asyncio.sleep(ACCEPT_PAUSE)
                continue
            self._admit(conn, loop)

    def _admit(self, conn: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        if self._admitted >= self.room or self._closing:
            self.refused += 1
            with contextlib.suppress(OSError):
                conn.setblocking(False)
                # What the client sent is read first: a socket closed with unread input
                # is reset, and the reset may reach the client before the 503 does.
                conn.recv(MAX_MESSAGE)
            with contextlib.suppress(OSError):
                conn.send(REFUSAL)
            conn.close()
            return
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, VIEWER_SNDBUF)
        assert self._runner is not None
        server = self._runner.server
        assert server is not None
        self._admitted += 1
        door = _Door(self, server())
        task = loop.create_task(loop.connect_accepted_socket(lambda: door, conn))
        task.add_done_callback(lambda done: self._connected(done, door, conn))

    def _connected(self, task: asyncio.Task[Any], door: _Door, conn: socket.socket) -> None:
        failed = task.cancelled() or task.exception() is not None
        if failed and door.transport is None:  # so connection_lost will never come
            conn.close()
            self._admitted -= 1

    def _left(self, door: _Door) -> None:
        if door.transport is not None:
            self._doors.pop(door.transport, None)
        self._admitted -= 1

    async def __aenter__(self) -> Monitor:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # ---- frames ------------------------------------------------------------------------

    async def _sample_forever(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            if self._viewers:
                self._broadcast()

    def _broadcast(self, rows: bool = False) -> None:
        """Sample the crawl once and queue the frame for every viewer: with the workers'
        rows every `workers_every` frames (and always for a viewer's first)."""
        started = time.perf_counter()
        try:
            self._sample(rows)
        finally:
            self.busy_seconds += time.perf_counter() - started

    def _sample(self, rows: bool) -> None:
        rows = rows or self.frames % self.workers_every == 0
        # "Suspended at" only for the rows some viewer shows: reading it walks a task.
        no_rows: frozenset[int] = frozenset()
        shown = no_rows.union(*(viewer.shows for viewer in self._viewers)) if rows else no_rows
        snap = self.observed.snapshot(shown)
        new = [record_to_plain(record) for record in self._new_records()]
        self._window.extend(new)
        self._update_chains(snap)
        self.frames += 1
        plain = snapshot_to_plain(snap, rows)
        frame: dict[str, Any] = {"kind": "frame", "snapshot": plain, "viewers": self.viewers}
        frame.update(self._new_events())
        shared = json.dumps({**frame, "recent": new, **self._chains_if_new()})

        def first() -> str:
            # A viewer's past begins with its first frame.
            whole = {"recent": list(self._window), "recent_reset": True, **self._chains,
                     "events_reset": True, **self._introduce()}  # fmt: skip
            whole["snapshot"] = plain if rows else snapshot_to_plain(snap, rows=True)
            return json.dumps({**frame, **whole})

        self._send_all(shared, first)

    def _new_events(self) -> dict[str, Any]:
        """The flight recorder's events since the last frame, as the recording writes
        them, at most MAX_EVENTS of them: a crawl faster than that a frame sends the
        newest, and says the viewer's past has a gap ("events_gap"), which starts it over."""
        ring = self._past
        if ring is None:
            return {}
        items = ring.items(since=self._past_seen)
        gap = ring.dropped > self._past_seen or len(items) > MAX_EVENTS
        self._past_seen = ring.added
        out: dict[str, Any] = {"events": [to_event(item) for item in items[-MAX_EVENTS:]]}
        if gap:
            out["events_gap"] = True
        return out

    def _introduce(self) -> dict[str, Any]:
        """What a viewer's first frame carries besides the crawl's state: nothing here,
        where the hello names the crawl (a lecture's monitor names its stage-3 crawl)."""
        return {}

    def _send_all(self, shared: str | None, first: Callable[[], str]) -> None:
        """Queue `shared` for every viewer (None: for none), and `first()` (made once)
        instead for each viewer that has had no frame yet; then drop those furthest
        behind."""
        whole: str | None = None
        backlog: list[tuple[int, Viewer]] = []
        for viewer in list(self._viewers):
            text = shared
            if viewer.fresh:
                if whole is None:
                    whole = first()
                text, viewer.fresh = whole, False
            if text is None:
                continue
            behind = self._queue(viewer, text)
            if behind:
                backlog.append((behind, viewer))
        self._trim(backlog)

    def _trim(self, backlog: list[tuple[int, Viewer]]) -> None:
        """Drop the viewers furthest behind while all of them together had more than the
        total limit waiting before this frame: what many slow viewers cost the process is
        bounded, not only what each one does. (A frame just queued is no backlog: 256
        viewers that keep up each have one at this moment.)"""
        total = sum(behind for behind, _ in backlog)
        for behind, viewer in sorted(backlog, key=lambda pair: pair[0], reverse=True):
            if total <= self.limits.total_behind_bytes:
                break
            self._drop(viewer)
            total -= behind

    def _new_records(self) -> list[FetchRecord]:
        """The fetches since the last frame (all the window holds, if more came)."""
        recent = self.observed.recent_fetches()
        new: list[FetchRecord] = []
        for record in reversed(recent):
            if record is self._last_record:
                break
            new.append(record)
        if recent:
            self._last_record = recent[-1]
        new.reverse()
        return new

    def _update_chains(self, snap: Snapshot) -> None:
        a = snap.accounting
        # A chain's end also moves with no new hop: when its last URL is fetched.
        key = (snap.redirect_version, a.done + a.failed + a.filtered + a.unfetched)
        if key == self._chains_key:
            self._chains_changed = False
            return
        self._chains_key = key
        chains, count = self.observed.chain_preview(MAX_CHAINS, MAX_HOPS)
        self._chains = {
            "chains": [chain_to_plain(chain) for chain in chains],
            "chain_count": count,
        }
        self._chains_changed = True

    def _chains_if_new(self) -> dict[str, Any]:
        return self._chains if self._chains_changed else {}

    def _queue(self, viewer: Viewer, text: str) -> int:
        """Queue `text` for `viewer`, or drop the viewer if it is too far behind: more
        bytes waiting for it than the limit, or something waiting for too long. The
        bytes that were waiting for it before (0 once dropped)."""
        behind = viewer.behind()
        now = time.monotonic()
        if viewer.waiting() == 0:
            viewer.behind_since = None
        elif viewer.behind_since is None:
            viewer.behind_since = now
        limits = self.limits
        # A viewer with nothing waiting takes a frame of any size: a crawl of very many
        # workers may make one bigger than the limit.
        if (behind and behind + len(text) > limits.max_behind_bytes) or (
            viewer.behind_since is not None
            and now - viewer.behind_since > limits.max_behind_seconds
        ):
            self._drop(viewer)
            return 0
        viewer.queued += len(text)  # JSON text is ASCII: its length is its bytes
        viewer.queue.put_nowait(text)
        return behind

    def queued_bytes(self) -> int:
        """Bytes waiting for all the viewers, in this process and its kernel."""
        return sum(viewer.behind() for viewer in self._viewers)

    def _drop(self, viewer: Viewer) -> None:
        """Let a viewer that fell behind go at once, without waiting for it in any way:
        a close handshake or an error would wait on the very reading it does not do."""
        if viewer not in self._viewers:
            return
        self._viewers.remove(viewer)
        self.dropped += 1
        if viewer.sender is not None:
            viewer.sender.cancel()
        _empty(viewer)
        if viewer.transport is not None:
            viewer.transport.abort()

    def _dismiss(self, viewer: Viewer, why: str) -> None:
        """Let a viewer that is reading go: what is queued for it (the error that says
        why) is sent first, then the connection closes with `why`."""
        if viewer not in self._viewers:
            return
        self._viewers.remove(viewer)
        self.dropped += 1
        viewer.queue.put_nowait(None)
        viewer.closing = asyncio.create_task(self._close_after_sender(viewer, why))

    async def _close_after_sender(self, viewer: Viewer, why: str) -> None:
        if viewer.sender is not None:
            await asyncio.wait([viewer.sender], timeout=CLOSE_WAIT)
        await self._close_viewer(viewer, WSCloseCode.POLICY_VIOLATION, why)

    # ---- a viewer's connection ---------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        refusal = self._foreign(request)
        if refusal is not None:
            raise web.HTTPForbidden(text=refusal)
        given = request.query.get(TOKEN_PARAM)
        if given is not None and not secrets.compare_digest(given.encode(), self.token.encode()):
            raise web.HTTPForbidden(text="wrong control token\n")
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, heartbeat=20.0)
        await ws.prepare(request)
        door = self._doors.get(request.transport) if request.transport is not None else None
        if door is not None:
            door.upgraded()
        if self._closing:
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"the crawl has gone")
            return ws
        viewer = Viewer(ws, _address(request), given is not None, request.transport)
        self._queue(viewer, json.dumps(self._hello(viewer)))
        viewer.sender = asyncio.create_task(self._send(viewer), name="monitor-viewer")
        self._viewers.append(viewer)
        try:
            await self._read(viewer)
            if viewer.closing is not None:
                await viewer.closing  # else aiohttp would close it first, with no reason
        finally:
            if viewer in self._viewers:
                self._viewers.remove(viewer)
                if viewer.sender is not None:
                    viewer.sender.cancel()
        return ws

    def _hello(self, viewer: Viewer) -> dict[str, Any]:
        return {
            "kind": "hello",
            "version": VERSION,
            "config": config_to_plain(self.observed.config),
            "steer": viewer.steer and self.controls is not None,
            "you": viewer.address,
        }

    async def _send(self, viewer: Viewer) -> None:
        while (text := await viewer.queue.get()) is not None:
            viewer.queued -= len(text)
            started = time.perf_counter()
            # Framing and writing to the socket; it waits only when the socket is full.
            await viewer.ws.send_str(text)
            self.busy_seconds += time.perf_counter() - started

    async def _read(self, viewer: Viewer) -> None:
        async for message in viewer.ws:
            if message.type is WSMsgType.TEXT:
                self._answer(viewer, message.data)
            elif message.type is WSMsgType.BINARY:
                self._answer(viewer, None)
            elif message.type is WSMsgType.ERROR:
                break  # too big, or broken: aiohttp closes with the reason's code
            if viewer not in self._viewers:
                break

    def _answer(self, viewer: Viewer, text: str | None) -> None:
        if not self._within_rate(viewer):
            return
        try:
            if text is None:
                raise Refused("send text: JSON messages only")
            name = self._act(viewer, text)
        except Refused as exc:
            self._queue(viewer, json.dumps({"kind": "error", "error": str(exc)}))
        else:
            if name != "view":  # said often and needing no answer
                self._queue(viewer, json.dumps({"kind": "ok", "control": name}))

    def _within_rate(self, viewer: Viewer) -> bool:
        now = time.monotonic()
        viewer.tokens = min(BURST, viewer.tokens + (now - viewer.refilled_at) * RATE)
        viewer.refilled_at = now
        if viewer.tokens >= 1.0:
            viewer.tokens -= 1.0
            viewer.refused = 0
            return True
        viewer.refused += 1
        if viewer.refused == 1:
            error = f"too many messages: at most {RATE:g} a second; the rest are ignored"
            self._queue(viewer, json.dumps({"kind": "error", "error": error}))
        elif viewer.refused > FLOOD_LIMIT:
            self._dismiss(viewer, "too many messages")
        return False

    def _act(self, viewer: Viewer, text: str) -> str:
        """Check a control message and carry it out; Refused says what is wrong."""
        try:
            message = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise Refused(f"not JSON: {str(exc)[:80]}") from None
        if isinstance(message, dict) and set(message) == {"view"}:
            viewer.shows = self._shown_ids(message["view"])
            return "view"
        if not isinstance(message, dict) or not isinstance(message.get("control"), str):
            raise Refused('expected {"control": NAME, "args": {...}}')
        name = message["control"]
        args = message.get("args", {})
        if set(message) - {"control", "args"} or not isinstance(args, dict):
            raise Refused('expected {"control": NAME, "args": {...}} and nothing else')
        if name not in CONTROLS:
            raise Refused(f"unknown control {name[:40]!r}; known: {', '.join(CONTROLS)}")
        if not viewer.steer:
            raise Refused("read-only: this connection has no control token")
        if self.controls is None:
            raise Refused("this crawl cannot be steered")
        call = self._checked(name, args)
        call()
        return name

    @staticmethod
    def _shown_ids(ids: object) -> frozenset[int]:
        if not isinstance(ids, list) or len(ids) > MAX_VIEW:
            raise Refused(f"view must be a list of at most {MAX_VIEW} worker ids")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise Refused("view must be a list of worker ids (whole numbers)")
        return frozenset(ids)

    def _checked(self, name: str, args: dict[str, Any]) -> Callable[[], object]:
        spec = CONTROLS[name]
        unknown = set(args) - set(spec)
        if unknown:
            raise Refused(f"{name} takes no argument {sorted(unknown)[0][:40]!r}")
        for arg, required in spec.items():
            if required and arg not in args:
                raise Refused(f"{name} needs {arg!r}")
        controls = self.controls
        assert controls is not None
        if "host" in args:
            try:
                return host_control(controls, name, args)
            except ValueError as exc:
                raise Refused(str(exc)) from None
        if "worker" in args:
            worker = self._worker(args["worker"])
            method: Callable[[int], object] = getattr(controls, name)
            return lambda: method(worker)
        if "seconds" in args:
            seconds = args["seconds"]
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                raise Refused("seconds must be a number")
            if not (math.isfinite(seconds) and 0 <= seconds <= MAX_SLOWMO):
                raise Refused(f"seconds must be from 0 to {MAX_SLOWMO:g}")
            return lambda: controls.set_slowmo(float(seconds))
        bare: Callable[[], object] = getattr(controls, name)
        return bare

    def _worker(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Refused("worker must be a worker id (a whole number)")
        if value not in self.observed.snapshot((), rows=False).row_ids():
            raise Refused(f"no worker {value}")
        return value

    async def _close_viewer(self, viewer: Viewer, code: int, why: str) -> None:
        if viewer in self._viewers:
            self._viewers.remove(viewer)
        if viewer.sender is not None:
            viewer.sender.cancel()
        try:
            await asyncio.wait_for(viewer.ws.close(code=code, message=why.encode()), CLOSE_WAIT)
        except (TimeoutError, ConnectionError, RuntimeError):
            if viewer.transport is not None:
                viewer.transport.abort()

    def _foreign(self, request: web.Request) -> str | None:
        return page_refusal(request, self.limits.allow_origins, "this crawl", "the monitor's")


def page_refusal(
    request: web.Request, allowed: frozenset[str], what: str, whose: str
) -> str | None:
    """Why a web page may not watch `what` (None: it may). A browser names the page's
    origin on every WebSocket; a program such as `crawlscope attach` names none. A
    page may connect from the server's own origin, reached by an address (not a name
    some other site's DNS could point here), or from an origin the user allowed."""
    given = request.headers.get(hdrs.ORIGIN)
    if given is None:
        return None
    try:
        origin = origin_of(given)
    except ValueError:
        origin = None
    if origin is not None and origin in allowed:
        return None
    if origin is not None and origin != "null" and origin == own_origin(request):
        return None
    shown = given[:100].encode("ascii", "backslashreplace").decode()
    return (
        f"a page from {shown!r} may not watch {what}: only {whose} own "
        "origin, or one allowed with --allow-origin\n"
    )


def own_origin(request: web.Request) -> str | None:
    """The origin `request` was sent to, if it names this machine by an address."""
    host = request.headers.get(hdrs.HOST, "")
    try:
        own = origin_of(f"http://{host}")
    except ValueError:
        return None
    name = urlsplit(own).hostname or ""
    if name != "localhost" and name not in _own_names():
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return None
    return own


def _own_names() -> frozenset[str]:
    """This machine's name (a `--monitor` on 0.0.0.0 prints one of them in its URL)."""
    return frozenset({socket.gethostname().lower()})


def _say(line: str) -> None:
    """One line for the user about the monitor (the crawl goes on)."""
    print(f"crawlscope: {line}", file=sys.stderr, flush=True)


def _empty(viewer: Viewer) -> None:
    """Let go of what was queued for a viewer that is gone."""
    while not viewer.queue.empty():
        viewer.queue.get_nowait()
    viewer.queued = 0


def _address(request: web.Request) -> str:
    """Where a viewer watches from: its address, and the name it gives (`?viewer=`: the
    browser a `serve` process watches for) when that is a plausible host name."""
    peer = request.remote or "?"
    name = request.query.get(VIEWER_PARAM, "")
    return f"{name} via {peer}" if VIEWER_NAME.fullmatch(name) else peer
