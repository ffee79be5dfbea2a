"""The `h` screen: every host of the crawl (the busiest the snapshot carries), with keys
on the selected one where the source can be steered.

It reads the source the panels read, so a live crawl, a replay at the moment it shows,
a monitor attached to or a cluster all draw the same rows. Whether the keys apply is
asked of the controls handed in (None: watch only), never of the source's class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl
from crawlscope.engine.observe.snapshot import OVER, HostView
from crawlscope.engine.observe.text import printable

from ..widgets.crawl_shape import CrawlShape
from ..widgets.hosts_table import HostsTable

REFRESH = 0.25  # seconds between two looks at the source
DELAY_STEP = 0.5  # seconds the delay keys add or take away
STEERING = frozenset({"toggle_block", "delay", "limit"})


class HostsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "toggle_block", "Block/unblock"),
        Binding("d", "delay(1)", "Delay +"),
        Binding("D", "delay(-1)", "Delay -"),
        Binding("l", "limit(1)", "Limit +"),
        Binding("L", "limit(-1)", "Limit -"),
        Binding("P", "by_process", "By process"),
        Binding("escape,h,q", "dismiss", "Close"),
    ]

    def __init__(
        self, source: ObservedCrawl, controls: CrawlControls | None, reproducible: bool = False
    ) -> None:
        super().__init__()
        self.source = source
        self.controls = controls
        self.reproducible = reproducible
        self.shape = CrawlShape()
        # A cluster's view can say each process's own rows (ClusterCrawl.process_hosts):
        # asked of the source, like the controls, not of its class.
        self.processes: Callable[[], list[tuple[str, tuple[HostView, ...]]]] | None = getattr(
            source, "process_hosts", None
        )
        self.by_process = False  # the rows of each process instead of the merged ones
        self.looks = 0  # how many times the rows were looked at: what a test waits on

    def compose(self) -> ComposeResult:
        with Vertical(id="hosts-body"):
            yield Static(id="hosts-title")
            yield Static(id="hosts-shape")
            yield HostsTable()
            yield Footer()

    def on_mount(self) -> None:
        self.border_title = "hosts"
        self.refresh_rows()
        self.set_interval(REFRESH, self.refresh_rows)
        self.query_one(HostsTable).focus()

    def on_resize(self) -> None:
        self.call_after_refresh(self.refresh_rows)  # the columns that fit the new width

    @property
    def table(self) -> HostsTable:
        return self.query_one(HostsTable)

    def refresh_rows(self) -> None:
        self.looks += 1
        snap = self.source.snapshot((), rows=False)
        hosts = snap.hosts
        if self.by_process and self.processes is not None:
            hosts = tuple(
                replace(row, origin=f"{name} {row.origin}")
                for name, rows in self.processes()
                for row in rows
            )
        self.table.show(hosts, snap.elapsed, self.reproducible)
        shown = len(snap.hosts)
        more = f" (the busiest {shown} shown)" if snap.host_count > shown else ""
        keys = "" if self.controls is not None else "  watch only: no keys act on a host"
        left_out = self.table.left_out
        narrow = f"; too narrow for {', '.join(left_out)}" if left_out else ""
        self.query_one("#hosts-title", Static).update(
            f"{snap.host_count} host{'s' if snap.host_count != 1 else ''}{more};"
            f" blocked first, then by URLs waiting{narrow}{keys}"
        )
        shape = self.shape.line(snap, self.source.config.max_pages, self.reproducible)
        self.query_one("#hosts-shape", Static).update(shape)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "by_process":
            return self.processes is not None
        if action not in STEERING:
            return True
        if self.controls is None:
            return False  # hidden: this source cannot be steered
        if self.source.snapshot((), rows=False).phase in OVER or self.table.selected is None:
            return None
        if self.by_process:
            return None  # a key acts on a host of the whole crawl: in the merged rows
        return True

    def action_by_process(self) -> None:
        self.by_process = not self.by_process
        self.refresh_rows()

    def _target(self) -> tuple[CrawlControls, HostView] | None:
        """The controls and the selected host's row as the source has it now."""
        origin = self.table.selected
        if self.controls is None or origin is None:
            return None
        for host in self.source.snapshot((), rows=False).hosts:
            if host.origin == origin:
                return self.controls, host
        return None

    def action_toggle_block(self) -> None:
        target = self._target()
        if target is None:
            return
        controls, host = target
        name = printable(host.origin)  # a crawled name: shown literally, as in the table
        if host.blocked:
            controls.unblock_host(host.origin)
            self.notify(f"{name}: its URLs go back on the queue", title="unblocked", markup=False)
        else:
            controls.block_host(host.origin)
            self.notify(f"{name}: its URLs wait (counted as queued)", title="blocked", markup=False)
        self.refresh_rows()

    def action_delay(self, direction: int = 1) -> None:
        target = self._target()
        if target is not None:
            controls, host = target
            controls.set_host_delay(host.origin, max(0.0, host.delay + direction * DELAY_STEP))
            self.refresh_rows()

    def action_limit(self, direction: int = 1) -> None:
        target = self._target()
        if target is not None:
            controls, host = target
            # 0 is no limit: one step down from 1 would lift it, so 1 is the least set here.
            controls.set_host_limit(host.origin, max(1, host.limit + direction))
            self.refresh_rows()
