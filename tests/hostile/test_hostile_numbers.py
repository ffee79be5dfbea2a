"""`crawlscope attach` on a monitor whose every number sits at the edge of its range
(engine/exchange/plain.py: whole numbers to 2**63, seconds to 1e15): the range is one every panel
can draw, divide and subtract, so a frame the checks let through never crashes a screen."""

from __future__ import annotations

from typing import Any

from hostile_peers import HostileMonitor, frame, terminal

from crawlscope.engine.exchange.plain import MOST_FLOAT, MOST_INT


def at(whole: int, real: float) -> Any:
    def each(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: each(v) for k, v in value.items()}
        if isinstance(value, list):
            return [each(v) for v in value]
        if type(value) is int:
            return whole
        return real if type(value) is float else value

    def edge() -> dict[str, Any]:
        message: dict[str, Any] = each(frame(lambda field: f"text-{field}"))
        message["snapshot"]["depths"] = []  # a histogram's length is capped, not its counts
        return message

    return edge


async def test_every_number_at_the_top_of_its_range_is_drawn_and_the_viewer_stays_up() -> None:
    monitor = HostileMonitor(at(MOST_INT, MOST_FLOAT))
    async with monitor, terminal("attach", monitor.url) as term:
        await term.shows(f"{MOST_INT:,}".encode(), b" connected ", what="the largest count")
        for key in (b"h", b"\x1b", b"t", b"\x1b"):  # the hosts and timing screens too
            term.press(key)
        await term.shows(b" connected ", what="still connected")
        assert term.proc.poll() is None, term.tail()
        assert b"Traceback" not in term.bytes()
