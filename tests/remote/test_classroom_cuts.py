"""A viewer who joins while the screen's output has stopped inside an escape sequence or
a UTF-8 character sees what the others see: the relay sends only whole sequences, and
holds the rest for its next message (a real aiohttp server and WebSocket client; the
viewer's screen is what a terminal emulator, pyte, draws from what it received)."""

from __future__ import annotations

import aiohttp
import pyte
import pytest
from aiohttp import web

from crawlscope.tui.classroom.cuts import whole_keys, whole_part
from crawlscope.tui.classroom.limits import DEFAULT_LIMITS
from crawlscope.tui.classroom.model import ScreenModel
from crawlscope.tui.classroom.relay import Relay, Viewer

COLS, ROWS = 40, 6


async def joined_mid_sequence(first: bytes, rest: bytes) -> tuple[list[str], list[str]]:
    """The model's screen and a late joiner's, after `first`, a join, then `rest`."""
    relay = Relay(ScreenModel(COLS, ROWS), DEFAULT_LIMITS)

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        viewer = Viewer(ws, request.transport, False)
        relay.join(viewer)
        async for _message in ws:
            pass
        relay.leave(viewer)
        return ws

    app = web.Application()
    app.router.add_get("/ws", socket)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    try:
        relay.output(first)
        relay.flush()
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(f"http://127.0.0.1:{port}/ws") as ws,
        ):
            stream.feed(await ws.receive_bytes(timeout=30))  # the screen as it stands
            relay.output(rest)
            relay.flush()
            while screen.display != relay.model.text():
                stream.feed(await ws.receive_bytes(timeout=10))
    except TimeoutError:
        pass  # what the joiner has is what it shows
    finally:
        await runner.cleanup()
    return relay.model.text(), list(screen.display)


@pytest.mark.parametrize(
    ("first", "rest"),
    [
        (b"\x1b[2J\x1b[Hhello \x1b[38;5;2", b"14mgreen\x1b[0m world"),
        (b"\x1b[Hcaf\xc3", b"\xa9 ok"),
        (b"\x1b[Hlink \x1b]8;;http://127.0.0.1/", b"\x07here\x1b]8;;\x07 done"),
    ],
)
async def test_a_viewer_who_joins_mid_sequence_sees_the_same_screen(
    first: bytes, rest: bytes
) -> None:
    model, joiner = await joined_mid_sequence(first, rest)
    assert joiner == model
    assert not any("14m" in line or "\ufffd" in line for line in joiner)


def test_a_message_ends_only_between_whole_sequences() -> None:
    assert whole_part(b"ab\x1b[38;5;2") == 2
    assert whole_part(b"ab\x1b[38;5;214m") == 13
    assert whole_part(b"x\x1b]8;;http://a") == 1
    ended = b"x\x1b]8;;u\x1b\\y"  # an OSC ended by ST (ESC \\), then text
    assert whole_part(ended) == len(ended)
    assert whole_part(b"x\x1b(") == 1
    assert whole_part("a€".encode()[:2]) == 1
    assert whole_part("a😀".encode()) == 5
    # A tail that never ends is not held for ever.
    assert whole_part(b"\x1b]" + b"x" * (70 * 1024)) == 70 * 1024 + 2


@pytest.mark.parametrize(
    ("keys", "sent"),
    [
        (b"\x1b", b"\x1b"),  # the Escape key
        (b"ab\x1b[Ac\x1bOP\x1b[<0;1;1M", b"ab\x1b[Ac\x1bOP\x1b[<0;1;1M"),
        (b"\x1b[200~pasted\x1b[201~", b"\x1b[200~pasted\x1b[201~"),
        (b"x\x1b[1;", b"x"),  # cut short at the end
        (b"\x1b[\x1b[Ay", b"\x1b[Ay"),  # cut short by another ESC
        (b"\x1b" * 5, b""),  # an ESC last would make the next key alt+key
    ],
)
def test_the_lecturers_keys_go_on_as_whole_keys(keys: bytes, sent: bytes) -> None:
    assert whole_keys(keys) == sent
