"""A class's pages and relay in this process, over real sockets (tui/classroom/pages.py,
relay.py): the lecturer always gets in, a full class or not; what the lecturer's socket
sends is bounded before it is parsed; and each byte rule of the relay drops a viewer that
never reads, with the time rule out of reach."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
import pyte
import pytest
from aiohttp import web
from classroom_support import cells, never_reading

from crawlscope.tui.classroom.limits import ClassLimits
from crawlscope.tui.classroom.model import ScreenModel
from crawlscope.tui.classroom.pages import Pages
from crawlscope.tui.classroom.relay import Relay
from crawlscope.tui.waiting import wait_until

TIMEOUT = 30.0
FOREVER = 1e9  # seconds: a time rule that never drops anyone in a test


@dataclass
class Class:
    relay: Relay
    pages: Pages
    url: str  # the class page
    keys: list[bytes] = field(default_factory=list)  # what reached the screen

    @property
    def lecturer(self) -> str:
        return self.url.rstrip("/") + self.pages.lecturer_path


@asynccontextmanager
async def a_class(limits: ClassLimits, start: bool = True) -> AsyncIterator[Class]:
    """Pages and a relay served on a free port; `start`: with the relay's looks."""
    relay = Relay(ScreenModel(40, 10), limits)
    typed: list[bytes] = []
    pages = Pages(relay, 40, 10, typed.append)
    runner = web.AppRunner(pages.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    if start:
        relay.start()
    try:
        yield Class(relay, pages, f"http://127.0.0.1:{port}/", typed)
    finally:
        await relay.close()
        await runner.cleanup()


async def test_the_lecturer_takes_no_place_in_the_class_and_gets_in_when_it_is_full() -> None:
    async with (
        a_class(ClassLimits(max_viewers=2)) as room,
        aiohttp.ClientSession() as client,
        client.ws_connect(f"{room.lecturer}ws") as _lecturer,
        client.ws_connect(f"{room.url}ws") as _one,
        client.ws_connect(f"{room.url}ws") as _two,  # the lecturer counts for none
    ):
        await wait_until(lambda: len(room.relay.viewers) == 3, "both viewers in")
        await refused_as_full(client, room)
        async with client.ws_connect(f"{room.lecturer}ws") as again:  # a full class
            await again.send_str(json.dumps(["stdin", "p"]))
            await wait_until(lambda: room.keys == [b"p"], "the lecturer's key")


async def refused_as_full(client: aiohttp.ClientSession, room: Class) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await client.ws_connect(f"{room.url}ws")
    assert refused.value.status == 503


@pytest.mark.parametrize(
    "hostile",
    ["[" * 30_000, '["stdin", ' + "[" * 30_000 + "]]", '{"a":' * 10_000 + "1" + "}" * 10_000],
    ids=["brackets", "in-a-message", "objects"],
)
async def test_deep_nesting_on_the_lecturers_socket_is_ignored_and_the_next_key_arrives(
    hostile: str,
) -> None:
    async with (
        a_class(ClassLimits()) as room,
        aiohttp.ClientSession() as client,
        client.ws_connect(f"{room.lecturer}ws") as lecturer,
    ):
        await lecturer.send_str(hostile)
        await lecturer.send_str(json.dumps(["stdin", "n"]))
        # Either the key arrives or the lecturer's socket was dropped (a traceback).
        await wait_until(
            lambda: room.keys or not room.relay.viewers, "the key after it", timeout=TIMEOUT
        )
        assert room.keys == [b"n"], "the lecturer's socket dropped"


async def stuck_in(room: Class) -> socket.socket:
    """A viewer that never reads, whose socket here the kernel gives a small buffer: what
    is sent to it soon waits in this process."""
    sock = await never_reading(room.url)
    await wait_until(lambda: len(room.relay.viewers) == 1, "the stuck viewer in")
    (viewer,) = room.relay.viewers
    assert viewer.transport is not None
    ours = viewer.transport.get_extra_info("socket")
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    return sock


CHUNK = b"\x1b[H" + b"x" * 4000  # one message of the screen's output


async def test_a_viewer_with_too_many_bytes_waiting_is_dropped_as_output_is_sent() -> None:
    # No looks at all (relay.start not called) and no time rule: only the byte rule of
    # sending (relay.py, _send_all) can drop the viewer that never reads.
    limits = ClassLimits(max_behind_bytes=256 * 1024, max_behind_seconds=FOREVER,
                         total_behind_bytes=1 << 40)  # fmt: skip
    async with a_class(limits, start=False) as room:
        sock = await stuck_in(room)
        try:
            sent = 0
            while room.relay.viewers and sent < 16 * limits.max_behind_bytes:
                room.relay.output(CHUNK)
                room.relay.flush()
                sent += len(CHUNK)
            assert room.relay.dropped == 1, f"still there after {sent} bytes sent to it"
        finally:
            sock.close()


async def test_a_viewer_with_too_many_bytes_in_the_kernel_is_dropped_by_a_look() -> None:
    # A bound below what the kernel takes for a socket: the bytes wait there, not in
    # this process, where only a look (relay.py, look) sees them; the time rule is out of
    # reach. Sending never drops it here: a message goes while little waits in-process.
    limits = ClassLimits(max_behind_bytes=16 * 1024, max_behind_seconds=FOREVER,
                         total_behind_bytes=1 << 40)  # fmt: skip
    small = b"\x1b[H" + b"y" * 500
    async with a_class(limits, start=False) as room:
        sock = await stuck_in(room)
        try:
            (viewer,) = room.relay.viewers
            dropped_by = None
            for _ in range(1000):
                room.relay.output(small)
                room.relay.flush()
                if viewer not in room.relay.viewers:
                    dropped_by = "sending"  # not the rule under test
                    break
                room.relay.look()
                if viewer not in room.relay.viewers:
                    dropped_by = "a look"
                    break
            assert dropped_by == "a look", f"dropped by {dropped_by}"
        finally:
            sock.close()


def test_a_late_joiners_screen_has_the_colours_and_attributes_of_the_model() -> None:
    model = ScreenModel(40, 4)
    model.feed(
        b"\x1b[31mred\x1b[0m \x1b[1;44mbold on blue\x1b[0m\r\n"
        b"\x1b[38;5;214morange\x1b[0m \x1b[48;2;10;20;30mtrue\x1b[0m \x1b[7;4mrev\x1b[0m"
    )
    joiner = pyte.Screen(40, 4)
    pyte.ByteStream(joiner).feed(model.serialised())
    assert cells(joiner) == cells(model.screen)
    assert joiner.buffer[0][0].fg == "red" and joiner.buffer[1][0].fg != "default"
