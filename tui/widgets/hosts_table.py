"""The hosts table: one row per host (origin), as a snapshot carries them, with stable
row keys so a refresh updates cells in place and the cursor stays on its host."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import DataTable

from crawlscope.engine.snapshot import HostView, RobotsState

from ..format import crawled, duration

COLUMNS = (
    "host", "queued", "in flight", "done", "failed", "p50", "p99", "next fetch",
    "delay", "Crawl-delay", "limit", "robots.txt", "errors",
)  # fmt: skip

_PORT = re.compile(r":\d+$")

ROBOTS_STYLE = {
    RobotsState.REFUSED: "bold red",
    RobotsState.FETCHING: "yellow",
    RobotsState.UNKNOWN: "dim",
    RobotsState.IGNORED: "dim",
}


def host_cells(host: HostView, elapsed: float, reproducible: bool) -> tuple[Text, ...]:
    """A row's cells: `elapsed` is the snapshot's clock, which `next_fetch` is on; with
    `reproducible`, the figures of the wall clock are dashes and the port is left out."""
    origin = _PORT.sub(":PORT", host.origin) if reproducible else host.origin
    name = crawled(origin, 60, style="bold red" if host.blocked else "")
    if host.blocked:
        name = Text.assemble(("⛔ ", "bold red"), name)
    wait = host.next_fetch - elapsed

    def timed(seconds: float, none: str = "-") -> str:
        return "--" if reproducible else (duration(seconds) if seconds > 0 else none)

    rate = f"{host.error_rate:.0%}" if host.tries else "-"
    return (
        name,
        Text(str(host.queued), justify="right"),
        Text(str(host.in_flight), justify="right"),
        Text(str(host.done), justify="right"),
        Text(str(host.failed), justify="right", style="red" if host.failed else ""),
        Text(timed(host.p50), justify="right"),
        Text(timed(host.p99), justify="right"),
        Text(timed(wait, "now"), justify="right"),
        Text(f"{host.delay:g}s" if host.delay else "-", justify="right"),
        Text(f"{host.crawl_delay:g}s" if host.crawl_delay else "-", justify="right"),
        Text(str(host.limit) if host.limit else "none", justify="right"),
        Text(host.robots.value, style=ROBOTS_STYLE.get(host.robots, "")),
        Text(rate, justify="right", style="red" if host.streak >= 3 else ""),
    )


class HostsTable(DataTable[Text]):
    """Rows keyed by origin: a refresh with the same hosts in the same order updates the
    cells; any other rebuilds the rows and puts the cursor back on its host."""

    def __init__(self) -> None:
        super().__init__(id="hosts-table", cursor_type="row", zebra_stripes=True)
        self._order: tuple[str, ...] = ()
        self._cells: dict[str, tuple[Text, ...]] = {}

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(column, key=column)

    @property
    def selected(self) -> str | None:
        """The origin under the cursor, as the crawl names it (None: no rows)."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def show(self, hosts: tuple[HostView, ...], elapsed: float, reproducible: bool) -> None:
        order = tuple(host.origin for host in hosts)
        rows = {host.origin: host_cells(host, elapsed, reproducible) for host in hosts}
        if order == self._order:
            for origin, cells in rows.items():
                old = self._cells[origin]
                for column, cell, was in zip(COLUMNS, cells, old, strict=True):
                    if cell != was:
                        self.update_cell(origin, column, cell)
        else:
            chosen = self.selected
            self.clear()
            for origin in order:
                self.add_row(*rows[origin], key=origin)
            if chosen in order:
                self.move_cursor(row=order.index(chosen))
        self._order = order
        self._cells = rows
