"""Watching one crawl spread over many processes (`crawlscope attach redis://... --crawl-id`).

`ClusterAttached` is a source the app opens like `Attached`, but what it reaches is Redis,
not a monitor: `ClusterCrawl` merges every process's published state, and
`ClusterControls` sends the keys to the process that holds the worker. The screen is the
live screen with a panel above the footer: the cluster's figures, one line per process
(its host name, phase, workers, and the range its workers' ids are in) and each host's
readiness. Whoever can reach Redis can steer the crawl, so read-only is a choice of this
view (`--read-only`, what `serve --redis` gives the class), not a protection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Container
from dataclasses import dataclass, field, replace

import redis.asyncio as aioredis
from rich.text import Text
from textual.widget import Widget

from crawlscope.engine.cluster.observe import (
    ID_STRIDE,
    ClusterControls,
    ClusterCrawl,
    HostReadiness,
    ProcessView,
)
from crawlscope.engine.observe.snapshot import Phase, Snapshot
from crawlscope.engine.observe.text import mask_userinfo, printable

from .attach import AttachStarted
from .screens.panels import FRAMES_PER_SECOND
from .watched_base import WatchedBase

PROCESSES_LISTED = 6  # process lines on the panel; the rest are counted
HOSTS_LISTED = 4  # hosts named on the readiness line, the most queued first


class KeptClock(ClusterCrawl):
    """The cluster as the view shows it: when every process has gone (ended, or its key
    expired), the clock stays where the last of them left it, not back at 0:00, and the
    crawl is over (finished, or stopped with work left), not starting again."""

    def __init__(self, client: aioredis.Redis, crawl_id: str) -> None:
        super().__init__(client, crawl_id)
        self.last_elapsed = 0.0

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        snap = super().snapshot(where_for, rows)
        if self.processes:
            self.last_elapsed = snap.elapsed
            return snap
        if not self.ready.is_set():
            return snap  # none seen yet: nothing to keep
        phase = snap.phase if snap.phase is Phase.FINISHED else Phase.STOPPED
        return replace(snap, elapsed=self.last_elapsed, phase=phase)


def processes(number: int) -> str:
    return f"{number} process" if number == 1 else f"{number} processes"


@dataclass
class ClusterAttached:
    """Crawl `crawl_id` in the Redis at `redis_url`, every process of it. ValueError
    (with the reason) when `redis_url` is not a Redis URL."""

    redis_url: str
    crawl_id: str
    read_only: bool = False
    client: aioredis.Redis = field(init=False)
    cluster: ClusterCrawl = field(init=False)

    def __post_init__(self) -> None:
        # Connects on first use: a Redis that is down is told on the panel, not here.
        self.client = aioredis.Redis.from_url(
            self.redis_url, socket_connect_timeout=2, socket_timeout=10
        )
        self.cluster = KeptClock(self.client, self.crawl_id)

    async def run(self, started: AttachStarted) -> None:
        """Read the cluster until cancelled; tell `started` once a process is seen."""
        cluster = self.cluster
        reading = asyncio.create_task(cluster.run(), name="cluster-view")
        try:
            await cluster.ready.wait()
            controls = None if self.read_only else ClusterControls(cluster)
            started(cluster, controls, self.site)
            await reading
        finally:
            cluster.stop()
            reading.cancel()
            await asyncio.wait({reading})
            await self.client.aclose()
            if not reading.cancelled():
                reading.result()  # a bug in the reading is not hidden

    @property
    def site(self) -> str:
        ready = self.cluster.ready.is_set()
        return " ".join(self.cluster.config.roots) if ready else ""

    @property
    def where(self) -> str:
        return f"{mask_userinfo(self.redis_url)} crawl {self.crawl_id}"


def id_range(number: int) -> str:
    """The ids a process's workers have in the cluster view."""
    return f"{number * ID_STRIDE}-{(number + 1) * ID_STRIDE - 1}"


def process_line(process: ProcessView) -> Text:
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f" #{process.number} ", "bold")
    line.append(printable(process.name, 80), "bold cyan")
    line.append(f"  {process.phase.value.upper()}", PHASE_STYLE.get(process.phase, ""))
    workers = "worker" if process.live_workers == 1 else "workers"
    line.append(f"  {process.live_workers} {workers}, ids {id_range(process.number)}")
    if process.unreachable:
        line.append(f"  Redis lost: {printable(process.unreachable, 100)}", "bold red")
    return line


PHASE_STYLE = {
    Phase.RUNNING: "green",
    Phase.PAUSED: "bold yellow",
    Phase.FINISHED: "blue",
    Phase.STOPPED: "red",
}


def readiness(host: HostReadiness) -> str:
    if host.ready_in is None:
        when = "full (per-host)" if host.busy else "idle"
    elif host.ready_in == 0:
        when = "ready"
    else:
        when = f"in {host.ready_in:.1f} s"
    return f"{printable(host.host, 60)} {when}, {host.queued} queued, {host.busy} held"


def hosts_line(hosts: tuple[HostReadiness, ...]) -> Text:
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(" hosts ", "bold")
    if not hosts:
        line.append("none queued or held", "dim")
        return line
    listed = sorted(hosts, key=lambda h: (-h.queued, -h.busy, h.host))[:HOSTS_LISTED]
    line.append(" │ ".join(readiness(h) for h in listed))
    if len(hosts) > len(listed):
        line.append(f" │ +{len(hosts) - len(listed)} more", "dim")
    return line


def cluster_lines(attached: ClusterAttached) -> list[Text]:
    """What the panel says, a line each."""
    cluster = attached.cluster
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(" CLUSTER ", "bold black on cyan")
    head.append(f" {printable(attached.where, 200)}", "dim")
    if attached.read_only:
        head.append("  read-only", "bold yellow")
    if cluster.unreachable:
        head.append(f"  cannot reach Redis: {printable(cluster.unreachable, 120)}", "bold red")
    f = cluster.figures
    head.append(
        f"  {processes(len(cluster.processes))} · queue {f.queued} · unfinished "
        f"{f.unfinished} · in flight {f.in_flight} · seen {f.seen}",
        "bold",
    )
    lines = [head]
    lines += [process_line(p) for p in cluster.processes[:PROCESSES_LISTED]]
    more = len(cluster.processes) - PROCESSES_LISTED
    if more > 0:
        lines.append(Text(f" +{more} more {'process' if more == 1 else 'processes'}", "dim"))
    lines.append(hosts_line(cluster.hosts))
    return lines


class ClusterPanel(Widget):
    """The cluster above the footer: its figures, its processes, its hosts."""

    DEFAULT_CSS = """
    ClusterPanel {
        height: 3;
        background: $panel;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[Text] = []

    def show(self, lines: list[Text]) -> None:
        if lines != self._lines:
            self._lines = lines
            if self.styles.height is None or self.styles.height.value != len(lines):
                self.styles.height = len(lines)
            self.refresh()

    def render(self) -> Text:
        text = Text("\n").join(self._lines)
        # Each line cut at the edge, never wrapped: a wrapped line would push the last out.
        text.no_wrap, text.overflow = True, "ellipsis"
        return text


class ClusterScreen(WatchedBase):
    """The live screen on a cluster, with the panel that says which process is which."""

    def __init__(
        self,
        attached: ClusterAttached,
        *,
        fps: float = FRAMES_PER_SECOND,
        reproducible: bool = False,
    ) -> None:
        self._cluster_panel = ClusterPanel(id="cluster-panel")
        super().__init__(self._cluster_panel, fps=fps, reproducible=reproducible)
        self.attached = attached

    def show_bar(self) -> None:
        self._cluster_panel.show(cluster_lines(self.attached))

    def read_only(self) -> bool:
        return self.attached.read_only
