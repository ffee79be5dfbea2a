"""A crawl watched from another process: `RemoteCrawl` is an ObservedCrawl whose state
comes in frames from a monitor (monitor.py), and `RemoteControls` steers it when the URL
carried the control token.

The connection comes and goes; the last state stays. `link` says where it stands:
connecting, connected, ended (the crawl finished and its process went) or dropped (the
connection broke with the crawl still running, or never came). `run()` connects again
whenever it is lost, so a crawl that comes back is watched again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections import deque
from collections.abc import Callable, Container, Iterable, Sequence
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp

from ..config import CrawlConfig
from ..exchange.config_json import config_from_plain, config_to_plain
from ..exchange.plain import BadMessage
from ..observe.snapshot import OVER, Snapshot
from ..observe.text import PASSWORD_MASK, printable
from ..records import FetchRecord
from ..redirects import Chain
from ..trace.events import OTHER
from ..trace.flight import FlightRing, event_bytes
from ..trace.validation import BadEvent, check_event
from .monitor import MAX_EVENTS, RECENT_WINDOW
from .protocol import (
    MAX_VIEW,
    TOKEN_PARAM,
    VERSION,
    chain_from_plain,
    count_from_plain,
    record_from_plain,
    snapshot_from_plain,
    text_from_plain,
    texts_from_plain,
)

RETRY_FIRST = 0.25  # seconds before connecting again; doubled after each failure
RETRY_MOST = 3.0
# Frames from a monitor are big (every worker's row): a limit that any real one fits,
# so a broken or hostile monitor cannot make a viewer hold a gigabyte.
MAX_FRAME = 16 * 1024 * 1024
ERRORS_KEPT = 20
VIEW_EVERY = 0.25  # seconds: how often at most the rows shown are told to the monitor
CLOSE_WAIT = 2.0  # seconds a closing connection waits for the monitor's close frame


def steering(snap: Snapshot) -> tuple[object, ...]:
    """What the keys that steer a crawl change in its snapshot."""
    return (snap.phase, snap.paused_all, snap.live_workers, snap.slowmo)


class Link(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    ENDED = "ended"  # the crawl finished, then its monitor went away
    DROPPED = "dropped"


class RemoteCrawl:
    """The last frame a monitor sent, answering as the crawl itself would."""

    def __init__(self, url: str) -> None:
        self.url = url
        # Never repeated in words: an error quoting the URL (aiohttp's do) must not show it.
        self._token = parse_qs(urlsplit(url).query).get(TOKEN_PARAM, [""])[0]
        self.link = Link.CONNECTING
        self.why = ""  # what ended or dropped the connection, in words
        self.steer = False  # the monitor accepts controls from this connection
        self.viewers: tuple[str, ...] = ()  # every viewer's address, as of the last frame
        self.frames = 0  # frames received
        self.errors: deque[str] = deque(maxlen=ERRORS_KEPT)  # the monitor's refusals
        self.answers = 0  # "ok" and "error" answers received, for a caller to wait on
        self.refused = 0  # "error" answers received (the last few are in `errors`)
        self.ready = asyncio.Event()  # set at the first frame: there is something to draw
        # Called when a frame shows the crawl steered (paused, resumed, a worker more or
        # less): a screen drawing a few frames a second shows that at once, not at its next.
        self.steered: Callable[[], None] | None = None
        self.bad_frames = 0  # messages dropped because they were not the protocol's
        self.bad = ""  # what was wrong with the last of them, in words, for the status line
        self._config: CrawlConfig | None = None
        self._snap: Snapshot | None = None
        self._recent: deque[FetchRecord] = deque(maxlen=RECENT_WINDOW)
        self._chains: list[Chain] = []
        self._chain_count = 0
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._outbox: list[str] = []
        self._flushing: asyncio.Task[None] | None = None
        self._shown: frozenset[int] = frozenset()  # the rows the screen shows, as told
        self._view_timer: asyncio.TimerHandle | None = None
        # The recent past this viewer has seen, from the events each frame carries (a
        # crawl with a flight recorder sends them): what its timeline and rewind draw.
        self.past: FlightRing | None = None
        self._past_t = 0.0  # the time of the last event kept: they may not go back

    # ---- ObservedCrawl -------------------------------------------------------------------

    @property
    def config(self) -> CrawlConfig:
        if self._config is None:
            raise RuntimeError("no frame from the monitor yet: wait for `ready`")
        return self._config

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        """The last frame, rows and all (they came with it). `where_for` (the rows a screen
        shows) is told to the monitor, which reads "suspended at" for those workers in
        the frames that follow."""
        del rows
        if self._snap is None:
            raise RuntimeError("no frame from the monitor yet: wait for `ready`")
        if isinstance(where_for, Iterable):
            ids = frozenset(where_for)
            if ids:  # none asked for this frame: the rows shown are as they were
                self._show(ids)
        return self._snap

    def _show(self, ids: frozenset[int]) -> None:
        if ids == self._shown:
            return
        self._shown = ids
        if self._view_timer is None:
            # The latest set, at most VIEW_EVERY: a screen scrolling through its rows
            # must not spend the monitor's rate limit on the rows it passed.
            loop = asyncio.get_running_loop()
            self._view_timer = loop.call_later(VIEW_EVERY, self._send_view)

    def _send_view(self) -> None:
        self._view_timer = None
        if self._ws is not None and not self._ws.closed:
            self._queue_text(json.dumps({"view": sorted(self._shown)[:MAX_VIEW]}))

    def recent_fetches(self) -> Sequence[FetchRecord]:
        return self._recent

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        return self._chains[:limit], self._chain_count

    # ---- the connection ------------------------------------------------------------------

    async def run(self) -> None:
        """Stay connected until cancelled: connect, read frames, and when the connection
        is lost, wait a little and connect again."""
        wait = RETRY_FIRST
        async with aiohttp.ClientSession() as session:
            while True:
                if await self._connect_once(session):
                    wait = RETRY_FIRST
                await asyncio.sleep(wait)
                wait = min(wait * 2, RETRY_MOST)

    async def _connect_once(self, session: aiohttp.ClientSession) -> bool:
        """One connection, read to its end; True if a frame came over it."""
        got_frame = False
        try:
            async with session.ws_connect(self.url, max_msg_size=MAX_FRAME, heartbeat=20.0) as ws:
                self._ws = ws
                try:
                    async for message in ws:
                        if message.type is not aiohttp.WSMsgType.TEXT:
                            break
                        got_frame |= self._take(message.data)
                finally:
                    await self._close(ws)
                self._lost(self._close_words(ws))
        except aiohttp.WSServerHandshakeError as exc:
            self._lost("the monitor refused: wrong control token" if exc.status == 403
                       else f"the monitor refused the connection ({exc.status})")  # fmt: skip
        except (aiohttp.ClientError, OSError) as exc:
            self._lost(f"cannot connect: {exc}")
        except BadMessage as exc:
            self._lost(f"not a crawlscope monitor: {exc}")
        finally:
            self._ws = None
        return got_frame

    async def _close(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Close, waiting at most CLOSE_WAIT for the monitor's answer: aiohttp reads until
        the peer's close frame comes, and a hostile monitor that streams on and never
        sends one would hold this viewer there for good (then the socket is cut)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_WAIT):
                await ws.close()

    def _close_words(self, ws: aiohttp.ClientWebSocketResponse) -> str:
        if ws.close_code == aiohttp.WSCloseCode.MESSAGE_TOO_BIG:
            return "the monitor closed the connection: a message too big"
        return "the crawl's process went away" if ws.close_code != 1000 else "closed"

    def _lost(self, why: str) -> None:
        over = self._snap is not None and self._snap.phase in OVER
        self.link = Link.ENDED if over else Link.DROPPED
        if self._token:
            why = why.replace(self._token, PASSWORD_MASK)
        self.why = "the crawl ended" if over else why

    def _take(self, text: str) -> bool:
        """Apply one message; True for a frame. A message that is not the protocol's is
        dropped and told in `bad` (the viewer stays up, the last good state kept); only a
        bad hello raises BadMessage: then what answered is not a monitor at all."""
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return self._drop("not JSON")
        if not isinstance(message, dict):
            return self._drop("not an object")
        kind = message.get("kind")
        try:
            if kind == "hello":
                self._hello(message)
            elif kind == "frame":
                self._frame(message)
                return True
            elif kind == "error":
                self.errors.append(text_from_plain(message.get("error"), "error"))
                self.refused += 1
                self.answers += 1
            elif kind == "ok":
                self.answers += 1
            else:
                raise BadMessage(f"kind {printable(str(kind), 40)} is not known")
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            bad = exc if isinstance(exc, BadMessage) else BadMessage(f"{type(exc).__name__}")
            if kind == "hello":
                raise bad from None
            return self._drop(str(bad))
        return False

    def _drop(self, why: str) -> bool:
        self.bad_frames += 1
        self.bad = f"bad frame from monitor: {why}"
        return False

    def _hello(self, message: dict[str, Any]) -> None:
        version = message.get("version")
        if version != VERSION:
            raise BadMessage(f"protocol version {printable(repr(version), 40)}, not {VERSION}")
        self._config = config_from_plain(message.get("config"))
        steer = message.get("steer", False)
        if not isinstance(steer, bool):
            raise BadMessage("steer is not true or false")
        self.steer = steer
        if self._shown:
            self._send_view()  # a monitor met again knows nothing of this screen

    def _frame(self, message: dict[str, Any]) -> None:
        """Every field is checked before any is applied: a bad frame changes nothing."""
        if self._config is None:
            raise BadMessage("a frame before the hello")
        plain = message.get("snapshot")
        snap = snapshot_from_plain(plain)
        if isinstance(plain, dict) and "workers" not in plain:
            if self._snap is None:
                raise BadMessage("a first frame without the workers")
            # A frame between the rows' frames: the figures move, the rows stay.
            snap = dataclasses.replace(
                snap, workers=self._snap.workers, worker_ids=self._snap.worker_ids
            )
        recent = message.get("recent")
        if not isinstance(recent, list):
            raise BadMessage("recent is not a list")
        records = [record_from_plain(r, f"recent[{i}]") for i, r in enumerate(recent)]
        chains: list[Chain] | None = None
        if "chains" in message:
            plains = message["chains"]
            if not isinstance(plains, list):
                raise BadMessage("chains is not a list")
            chains = [chain_from_plain(c, f"chains[{i}]") for i, c in enumerate(plains)]
            chain_count = count_from_plain(message.get("chain_count"), "chain_count")
        viewers = texts_from_plain(message.get("viewers"), "viewers")
        reset = message.get("recent_reset", False)
        if not isinstance(reset, bool):
            raise BadMessage("recent_reset is not true or false")
        events = self._events(message)
        if reset:
            self._recent.clear()
        if events is not None:
            self._keep_events(message, events)
        if chains is not None:
            self._chains, self._chain_count = chains, chain_count
        self._recent.extend(records)
        self.viewers = viewers
        before, self._snap = self._snap, snap
        self.frames += 1
        self.link = Link.CONNECTED
        self.why = ""
        self.ready.set()
        if self.steered is not None and before is not None and steering(before) != steering(snap):
            self.steered()

    def _events(self, message: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The frame's flight recorder events, each checked as a recording's line is
        (engine/trace/validation.py); None when the frame has none."""
        events = message.get("events")
        if events is None:
            return None
        if not isinstance(events, list) or len(events) > MAX_EVENTS:
            raise BadMessage(f"events is not a list of at most {MAX_EVENTS}")
        for key in ("events_reset", "events_gap"):
            if not isinstance(message.get(key, False), bool):
                raise BadMessage(f"{key} is not true or false")
        restart = self.past is None or message.get("events_reset") or message.get("events_gap")
        t = 0.0 if restart else self._past_t
        for i, event in enumerate(events):
            try:
                t = check_event(event, t)
            except BadEvent as exc:
                raise BadMessage(f"events[{i}]: {exc}") from None
        return events

    def _keep_events(self, message: dict[str, Any], events: list[dict[str, Any]]) -> None:
        if self.past is None or message.get("events_reset") or message.get("events_gap"):
            # A past of its own from here: what came before this viewer, or was skipped,
            # is not in it.
            assert self._config is not None
            self.past = FlightRing()
            self.past.start = {"kind": "start", "config": config_to_plain(self._config)}
        ring = self.past
        for event in events:
            ring.add((OTHER, event["t"], event), event_bytes(event))
            self._past_t = float(event["t"])

    # ---- sending controls ----------------------------------------------------------------

    def send(self, control: str, **args: object) -> bool:
        """Ask the monitor to carry out `control`; False when not connected. Sent from a
        task, so a caller on the loop (a key press) never waits for the network."""
        if self._ws is None or self._ws.closed:
            return False
        self._queue_text(json.dumps({"control": control, "args": args}))
        return True

    def _queue_text(self, text: str) -> None:
        self._outbox.append(text)
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._outbox and self._ws is not None:
            text = self._outbox.pop(0)
            with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
                await self._ws.send_str(text)


class RemoteControls:
    """CrawlControls over a monitor's connection. Each answers at once whether it was
    sent; the effect shows in a frame or two, the refusal in `RemoteCrawl.errors`."""

    def __init__(self, remote: RemoteCrawl) -> None:
        self.remote = remote

    def pause_all(self) -> None:
        self.remote.send("pause_all")

    def resume_all(self) -> None:
        self.remote.send("resume_all")

    def pause(self, worker_id: int) -> bool:
        return self.remote.send("pause", worker=worker_id)

    def resume(self, worker_id: int) -> bool:
        return self.remote.send("resume", worker=worker_id)

    def cancel_worker(self, worker_id: int) -> bool:
        return self.remote.send("cancel_worker", worker=worker_id)

    def add_worker(self) -> object:
        return self.remote.send("add_worker")

    def remove_worker(self, worker_id: int | None = None) -> object:
        if worker_id is None:
            return self.remote.send("remove_worker")
        return self.remote.send("remove_worker", worker=worker_id)

    def set_slowmo(self, seconds: float) -> None:
        self.remote.send("set_slowmo", seconds=seconds)

    def stop(self) -> None:
        self.remote.send("stop")

    def block_host(self, origin: str) -> bool:
        return self.remote.send("block_host", host=origin)

    def unblock_host(self, origin: str) -> bool:
        return self.remote.send("unblock_host", host=origin)

    def set_host_delay(self, origin: str, seconds: float) -> None:
        self.remote.send("set_host_delay", host=origin, seconds=seconds)

    def set_host_limit(self, origin: str, limit: int) -> None:
        self.remote.send("set_host_limit", host=origin, limit=limit)
