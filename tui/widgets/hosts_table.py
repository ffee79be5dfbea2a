"""The hosts table: one row per host (origin), as a snapshot carries them, with stable
row keys so a refresh updates cells in place and the cursor stays on its host."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import DataTable

from crawlscope.engine.observe.snapshot import HostView, RobotsState

from ..format import crawled, duration

COLUMNS = (
    "host", "queued", "in flight", "done", "failed", "p50", "p99", "next fetch",
    "delay", "Crawl-delay", "limit", "robots.txt", "errors",
)  # fmt: skip
# Headers on two lines where that narrows a column (the table has a header two rows high).
LABELS = {"in flight": "in\nflight", "next fetch": "next\nfetch", "Crawl-delay": "Crawl-\ndelay"}
# Where the table is narrower than its columns (the hosts screen at 120 columns with a long
# host name), columns are left out in this order, those that say nothing ("-" in every
# row) before any other: the host's name is shown whole, and the title says what is left out.
DROP_ORDER = ("Crawl-delay", "delay", "errors", "robots.txt", "next fetch", "p50")
PADDING = 2  # a cell's padding, one each side
# A blocked host's mark: Latin-1, so in every monospace font ("⛔" is in none that Debian's
# Chromium has: an empty box in the class's page).
BLOCKED = "\N{MULTIPLICATION SIGN} "
ROBOTS_WORD = {RobotsState.UNKNOWN: "not yet"}  # "not yet fetched", in a column 10 wide

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
        name = Text.assemble((BLOCKED, "bold red"), name)
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
        Text(
            ROBOTS_WORD.get(host.robots, host.robots.value), style=ROBOTS_STYLE.get(host.robots, "")
        ),
        Text(rate, justify="right", style="red" if host.streak >= 3 else ""),
    )


Layout = tuple[tuple[str, int], ...]  # (column, its width without padding), in order


def fitted_columns(cells: list[tuple[Text, ...]], width: int) -> Layout:
    """The columns that fit in `width` cells with rows of `cells`, in table order, each as
    wide as its widest cell: all of them if they fit, else less those of DROP_ORDER, the
    empty ones first, until they fit."""

    def natural(i: int, column: str) -> int:
        label = max(len(line) for line in LABELS.get(column, column).split("\n"))
        return max([label, *(row[i].cell_len for row in cells)])

    widths = {column: natural(i, column) for i, column in enumerate(COLUMNS)}
    empty = {c for i, c in enumerate(COLUMNS) if all(row[i].plain == "-" for row in cells)}
    order = [c for c in DROP_ORDER if c in empty] + [c for c in DROP_ORDER if c not in empty]
    shown = list(COLUMNS)
    while width and sum(widths[c] + PADDING for c in shown) > width and order:
        shown.remove(order.pop(0))
    return tuple((column, widths[column]) for column in shown)


class HostsTable(DataTable[Text]):
    """Rows keyed by origin: a refresh with the same hosts in the same order, in columns
    of the same widths, updates the cells; any other rebuilds the table and puts the
    cursor back on its host. The columns are those that fit the table's width, each as
    wide as its cells, set here: Textual's own measure of a column comes after the rows
    are drawn, and a row drawn before it stays cut (a host's name, when blocked)."""

    def __init__(self) -> None:
        super().__init__(id="hosts-table", cursor_type="row", zebra_stripes=True, header_height=2)
        self._order: tuple[str, ...] = ()
        self._cells: dict[str, tuple[Text, ...]] = {}
        self._layout: Layout = ()

    @property
    def columns_shown(self) -> tuple[str, ...]:
        return tuple(column for column, _ in self._layout)

    @property
    def left_out(self) -> tuple[str, ...]:
        """The columns too wide for the table now, in table order."""
        return tuple(column for column in COLUMNS if column not in self.columns_shown)

    @property
    def selected(self) -> str | None:
        """The origin under the cursor, as the crawl names it (None: no rows)."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def show(self, hosts: tuple[HostView, ...], elapsed: float, reproducible: bool) -> None:
        order = tuple(host.origin for host in hosts)
        rows = {host.origin: host_cells(host, elapsed, reproducible) for host in hosts}
        layout = fitted_columns(list(rows.values()), self.scrollable_content_region.width)
        index = [COLUMNS.index(column) for column, _ in layout]
        if (order, layout) == (self._order, self._layout):
            for origin, cells in rows.items():
                old = self._cells[origin]
                for i in index:
                    if cells[i] != old[i]:
                        self.update_cell(origin, COLUMNS[i], cells[i])
        else:
            chosen = self.selected
            self.clear(columns=True)
            for column, width in layout:
                self.add_column(Text(LABELS.get(column, column)), key=column, width=width)
            for origin in order:
                self.add_row(*(rows[origin][i] for i in index), key=origin)
            if chosen in order:
                self.move_cursor(row=order.index(chosen))
        self._order = order
        self._layout = layout
        self._cells = rows
