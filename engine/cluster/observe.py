"""The cluster watched and steered through Redis, with the same contract as one crawl.

Each crawling process publishes what its own screen would draw (`Publisher`): every
PUBLISH_EVERY seconds its snapshot, newest fetches and redirect chains go to a key that
expires after PUBLISHED_FOR seconds, so a process that died leaves the view by itself;
and it takes controls from a list of its own. Its snapshot carries every worker's id and
state but the views (what a row shows) only of its first FIRST_ROWS workers and of those
a view asks for (`want:<process>`, a hash of each view's rows on screen): at 10,000
workers a process pays for the rows on screens, not for all of them. `ClusterCrawl`
reads every process's key and the frontier's figures (queue, unfinished, leases in
flight, each host's readiness) and answers as an `ObservedCrawl`; `ClusterControls` sends
the keys' controls to the process that holds the worker, so a cancelled worker's lease
goes back at once.

A worker's id in the cluster view is `process number * ID_STRIDE + its id` there, and
the workers come grouped by process (numbered in the order the view first met them).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import socket
import time
from collections import deque
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..config import CrawlConfig
from ..exchange.config_json import config_from_plain, config_to_plain
from ..exchange.plain import BadMessage
from ..hosts.controls import HOST_CONTROLS, host_control
from ..hosts.figures import merge_depths, merge_host_rows
from ..observe.snapshot import MAX_WARNINGS, Accounting, HostView, Phase, Snapshot
from ..observe.text import printable
from ..observe.workers import WorkerState
from ..records import FetchRecord, describe_exception
from ..redirects import Chain
from ..remote.protocol import (
    chain_from_plain,
    chain_to_plain,
    count_from_plain,
    record_from_plain,
    record_to_plain,
    snapshot_from_plain,
    snapshot_to_plain,
    text_from_plain,
)
from ..timing.loop_health import MAX_HOLDS
from ..trace.flight import FlightRing
from .past import EVENTS_SENT, ID_STRIDE, STREAM_KEPT, ClusterPast, batch_fields
from .redis_frontier import ClusterFigures, key_prefix, redis_count

if TYPE_CHECKING:
    from ..crawler import Crawler

PUBLISH_EVERY = 0.5
PUBLISHED_FOR = 3  # seconds a process's key outlives its last publication
REFRESH_EVERY = 0.25
RECENT_SENT = 32  # newest fetches in each publication
CHAINS_SENT, HOPS_SENT = 20, 8
CONTROL_WAIT = 1  # seconds a process blocks on its control list before looking again
FIRST_ROWS = 64  # workers whose views a process always publishes (a view's first screen)
# What a view may ask of a process: its rows on screen are a few dozen; the hash is
# anyone's to write, so what is read of it is capped and checked.
WANT_MOST, WANT_VIEWS = 1000, 16
READ_MOST = 64  # stream entries a refresh reads: the rest wait for the next

# What a control may ask of a process, and whether it names a worker.
CONTROLS = {
    "pause_all": False, "resume_all": False, "pause": True, "resume": True,
    "cancel_worker": True, "add_worker": False, "remove_worker": True, "set_slowmo": False,
    "stop": False, **dict.fromkeys(HOST_CONTROLS, False),
}  # fmt: skip


class _Everything:
    """Holds every worker id: `where_for` None."""

    def __contains__(self, _item: object) -> bool:
        return True


_everything = _Everything()


def process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Publisher:
    """One crawling process's part: its state out, controls in."""

    def __init__(self, crawler: Crawler, client: aioredis.Redis, crawl_id: str) -> None:
        self.crawler = crawler
        self.client = client
        self.prefix = key_prefix(crawl_id)
        self.name = process_name()
        self.wanted: set[int] = set()  # this process's workers the views ask for
        self.watched = False  # a view has asked lately: the recorder's events go out
        self.past: FlightRing | None = None
        self._past_seen = 0  # the ring's events added when the last batch was made
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        if not self._tasks:
            self._stopping = False
            self._tasks = [
                asyncio.create_task(self._publish_forever(), name="cluster-publish"),
                asyncio.create_task(self._take_controls(), name="cluster-controls"),
            ]

    async def stop(self) -> None:
        # redis-py can swallow a cancellation that lands in the middle of a command (its
        # issue #2028, seen here as a RedisError): a loop that only waited to be cancelled
        # then published forever, and its process never ended. Each loop also looks at
        # _stopping, so it ends within one turn (CONTROL_WAIT at most) whatever a command
        # did with the cancellation.
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        tasks, self._tasks = self._tasks, []
        if tasks:
            await asyncio.wait(tasks)
        for task in tasks:
            if not task.cancelled():
                task.result()  # a bug in a loop is not hidden
        with contextlib.suppress(RedisError, OSError):
            await self.publish()  # the last state, seen until the key expires

    def keep_past(self, ring: FlightRing) -> None:
        self.past, self._past_seen = ring, ring.added

    def _epoch(self) -> float | None:
        """The wall-clock moment this process's clock (its events' times) began."""
        t0 = self.crawler.t0
        return None if t0 is None else time.time() - (time.monotonic() - t0)

    def past_batch(self) -> dict[str, str] | None:
        """The recorder's events since the last batch, for the views (past.py); None
        when no view watches: then they are passed over, not sent."""
        ring, t0 = self.past, self.crawler.t0
        if ring is None:
            return None
        seen, self._past_seen = self._past_seen, ring.added
        if not self.watched or t0 is None:
            return None
        items = ring.items(since=seen)
        gap = ring.dropped > seen or len(items) > EVENTS_SENT
        until = time.monotonic() - t0
        return batch_fields(self.name, items[-EVENTS_SENT:], time.time() - until, until, gap)

    def blob(self) -> str:
        c = self.crawler
        snap = c.snapshot(self.wanted.union(itertools.islice(c.workers, FIRST_ROWS)))
        recent = list(c.recent_fetches())[-RECENT_SENT:]
        chains, count = c.chain_preview(CHAINS_SENT, HOPS_SENT)
        unreachable = getattr(c.q, "unreachable", None)
        return json.dumps(
            {
                "name": self.name,
                "config": config_to_plain(c.config),
                "snapshot": snapshot_to_plain(snap),
                "recent": [record_to_plain(r) for r in recent],
                "chains": [chain_to_plain(chain) for chain in chains],
                "chain_count": count,
                "unreachable": unreachable,
                "epoch": self._epoch(),
            }
        )

    async def publish(self) -> None:
        p = self.prefix
        pipe = self.client.pipeline(transaction=False)
        pipe.set(f"{p}proc:{self.name}", self.blob(), ex=PUBLISHED_FOR)
        pipe.zadd(f"{p}procs", {self.name: time.time()})
        batch = self.past_batch()
        if batch is not None:
            pipe.xadd(f"{p}events", batch, maxlen=STREAM_KEPT, approximate=True)  # type: ignore[arg-type]
        pipe.hgetall(f"{p}want:{self.name}")
        *_, wants = await pipe.execute()
        self.wanted = wanted_rows(wants.values())
        self.watched = bool(wants)

    async def _publish_forever(self) -> None:
        while not self._stopping:
            with contextlib.suppress(RedisError, OSError):  # the frontier says it is lost
                await self.publish()
            if not self._stopping:
                await asyncio.sleep(PUBLISH_EVERY)

    async def _take_controls(self) -> None:
        key = f"{self.prefix}ctl:{self.name}"
        while not self._stopping:
            try:
                got = await self.client.blpop([key], timeout=CONTROL_WAIT)
            except (RedisError, OSError):
                await asyncio.sleep(CONTROL_WAIT)
                continue
            if got is not None:
                self.apply(got[1])

    def apply(self, raw: bytes | str) -> bool:
        """Do one control; False (and nothing done) if it is not one."""
        try:
            control = json.loads(raw)
            op = control["op"]
            needs_worker = CONTROLS[op]
        except (ValueError, KeyError, TypeError):
            return False
        c = self.crawler
        if op in HOST_CONTROLS:
            try:
                host_control(c, op, control, ahead=True)()  # another process met it
            except ValueError:
                return False
            return True
        worker = control.get("worker")
        if needs_worker and not (worker is None or isinstance(worker, int)):
            return False
        if op == "set_slowmo":
            seconds = control.get("seconds")
            if not isinstance(seconds, int | float) or not 0 <= seconds <= 10:
                return False
            c.set_slowmo(float(seconds))
        elif op == "remove_worker":
            c.remove_worker(worker)
        elif needs_worker:
            if worker is None:
                return False
            getattr(c, op)(worker)
        else:
            getattr(c, op)()
        return True


def wanted_rows(wants: Iterable[object]) -> set[int]:
    """The worker ids the views ask for, from the values of a `want:` hash: each a JSON
    list of ids. What is not one is passed over; at most WANT_VIEWS views of WANT_MOST
    ids each are read."""
    ids: set[int] = set()
    for raw in itertools.islice(wants, WANT_VIEWS):
        try:
            asked = json.loads(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError, RecursionError):
            continue
        if isinstance(asked, list) and len(asked) <= WANT_MOST:
            ids.update(i for i in asked if type(i) is int and 0 <= i < ID_STRIDE)
    return ids


@dataclass(frozen=True, slots=True)
class HostReadiness:
    host: str
    queued: int
    busy: int  # leases in flight on it, across the cluster
    ready_in: float | None  # seconds until it may be fetched again (None: not in `ready`)


@dataclass(frozen=True, slots=True)
class Published:
    """One process's publication, checked and its strings escaped (protocol.py): an
    entry in Redis is another process's word, as a monitor's frame is."""

    config: CrawlConfig
    snapshot: Snapshot
    recent: tuple[FetchRecord, ...]
    chains: tuple[Chain, ...]
    chain_count: int
    unreachable: str | None
    epoch: float | None  # the wall-clock moment its clock began (None: not begun)


def published_from(raw: bytes | str) -> Published:
    """BadMessage if `raw` is not a publication of ours."""
    try:
        blob = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadMessage("not JSON") from None
    if not isinstance(blob, dict):
        raise BadMessage("not an object")
    recent, chains = blob.get("recent"), blob.get("chains")
    if not isinstance(recent, list) or not isinstance(chains, list):
        raise BadMessage("recent or chains is not a list")
    unreachable, epoch = blob.get("unreachable"), blob.get("epoch")
    if epoch is not None and not (type(epoch) in (int, float) and math.isfinite(epoch)):
        raise BadMessage("epoch is not a time")
    return Published(
        config_from_plain(blob.get("config")),
        snapshot_from_plain(blob.get("snapshot")),
        tuple(record_from_plain(r, f"recent[{i}]") for i, r in enumerate(recent)),
        tuple(chain_from_plain(c, f"chains[{i}]") for i, c in enumerate(chains)),
        count_from_plain(blob.get("chain_count"), "chain_count"),
        None if unreachable is None else text_from_plain(unreachable, "unreachable"),
        epoch,
    )


def _text(raw: bytes | str) -> str:
    """A name read from Redis, for the screen: any bytes, escaped."""
    return printable(raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw))


def _raw(raw: object) -> bytes:
    return raw if isinstance(raw, bytes) else str(raw).encode()


@dataclass(frozen=True, slots=True)
class ProcessView:
    number: int  # its workers' ids are number * ID_STRIDE + their own
    name: str  # host:pid
    phase: Phase
    live_workers: int
    unreachable: str | None  # its frontier cannot reach Redis


class ClusterCrawl:
    """Every process of one crawl, read from Redis: an ObservedCrawl."""

    def __init__(self, client: aioredis.Redis, crawl_id: str) -> None:
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = key_prefix(crawl_id)
        self.figures = ClusterFigures()
        self.hosts: tuple[HostReadiness, ...] = ()
        self.processes: tuple[ProcessView, ...] = ()
        self.unreachable: str | None = None  # why this view cannot read Redis
        self.ready = asyncio.Event()  # set once a process has been read
        self.stopping = False  # run() ends at its next turn (stop())
        self._numbers: dict[str, int] = {}
        self._blobs: dict[str, Published] = {}
        self.bad_entries = 0  # publications left out: not what a process of ours writes
        self.bad = ""  # what was wrong with the last of them, in words
        self._config: CrawlConfig | None = None
        self._t0 = time.monotonic()
        # The rows this view last asked for, by process number, sent with each refresh
        # under a name of its own (other views of the same crawl ask for theirs).
        self._asked: dict[int, list[int]] = {}
        self._viewer = f"{process_name()}:{id(self):x}"
        self._past: ClusterPast | None = None
        self._events_from: str | bytes | None = None  # the stream's last entry read

    @property
    def past(self) -> FlightRing | None:
        """The recent past this view has read of every process (past.py)."""
        return None if self._past is None else self._past.ring

    @property
    def past_problems(self) -> tuple[int, int, str]:
        """Batches left out as bad, batches that said events went missing, and what was
        wrong with the last bad one."""
        past = self._past
        return (0, 0, "") if past is None else (past.bad, past.gaps, past.problem)

    def lane_label(self, worker: int) -> str:
        """A timeline lane's label: the process's number and the worker's own id."""
        number, local = divmod(worker, ID_STRIDE)
        return f"{number}·w{local}"

    # ---- ObservedCrawl -----------------------------------------------------------------

    @property
    def config(self) -> CrawlConfig:
        if self._config is None:
            raise RuntimeError("no process read yet: wait for `ready`")
        return self._config

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        snaps = [(self._numbers[name], blob.snapshot) for name, blob in self._in_order()]
        # One clock for the whole view, the longest-running process's; each process's
        # "since" is moved onto it so that every worker's time in its state is kept.
        elapsed = max((snap.elapsed for _, snap in snaps), default=0.0)
        # Views for the rows asked for only (None: every worker); the ids and the counts
        # of every process's workers, for the rest of the table and the status line.
        ids = tuple(number * ID_STRIDE + i for number, snap in snaps for i in snap.row_ids())
        asked = _everything if where_for is None else where_for
        if isinstance(where_for, Iterable):
            self._ask_for(where_for)
        workers = tuple(
            replace(view, id=cluster_id, since=view.since + elapsed - snap.elapsed)
            for number, snap in snaps
            for view in (snap.workers if rows else ())
            if (cluster_id := number * ID_STRIDE + view.id) in asked
        )
        states = dict.fromkeys(WorkerState, 0)
        for _, snap in snaps:
            for state, n in snap.state_counts():
                states[state] += n
        phases = {snap.phase for _, snap in snaps}
        return Snapshot(
            t=time.monotonic(),
            elapsed=elapsed,
            phase=self._phase(phases),
            workers=workers,
            live_workers=sum(snap.live_workers for _, snap in snaps),
            accounting=self.accounting(),
            unfinished=self.figures.unfinished,
            redirect_version=sum(snap.redirect_version for _, snap in snaps),
            paused_all=bool(snaps) and all(snap.paused_all for _, snap in snaps),
            slowmo=max((snap.slowmo for _, snap in snaps), default=0.0),
            crawl_delay=next((snap.crawl_delay for _, snap in snaps if snap.crawl_delay), ""),
            **_merged_timing(snaps, elapsed),
            worker_ids=ids,
            states=tuple((state, n) for state, n in states.items() if n),
            retiring=sum(snap.live_workers - snap.removable() for _, snap in snaps),
            hosts=merge_host_rows(
                (snap.hosts for _, snap in snaps), {h.host: h.queued for h in self.hosts}
            ),
            # Each process counts the hosts it met; the busiest are in every count.
            host_count=max((snap.host_count for _, snap in snaps), default=0),
            depths=merge_depths(snap.depths for _, snap in snaps),
        )

    def _ask_for(self, ids: Iterable[int]) -> None:
        asked: dict[int, list[int]] = {}
        for cluster_id in ids:
            number, local = divmod(cluster_id, ID_STRIDE)
            asked.setdefault(number, []).append(local)
        self._asked = {n: sorted(local)[:WANT_MOST] for n, local in asked.items()}

    def process_hosts(self) -> list[tuple[str, tuple[HostView, ...]]]:
        """Each process's own host rows, by its name: what it fetched, as it counts."""
        return [(printable(name), blob.snapshot.hosts) for name, blob in self._in_order()]

    def _in_order(self) -> list[tuple[str, Published]]:
        return sorted(self._blobs.items(), key=lambda item: self._numbers[item[0]])

    def _phase(self, phases: set[Phase]) -> Phase:
        if Phase.RUNNING in phases:
            return Phase.RUNNING
        if Phase.PAUSED in phases:
            return Phase.PAUSED
        if self.figures.unfinished == 0 and self.figures.seen:
            return Phase.FINISHED
        return Phase.STOPPED if phases else Phase.IDLE

    def accounting(self) -> Accounting:
        return self.figures.accounting()

    def recent_fetches(self) -> Sequence[FetchRecord]:
        records = [r for b in self._blobs.values() for r in b.recent]
        records.sort(key=lambda r: r.t_end)
        return deque(records, maxlen=256)

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        chains: dict[tuple[str, ...], Chain] = {}
        count = 0
        for blob in self._blobs.values():
            count += blob.chain_count
            for chain in blob.chains:
                chains.setdefault(chain.urls[:hops], chain)
        return list(chains.values())[:limit], count

    # ---- reading Redis -------------------------------------------------------------------

    async def run(self) -> None:
        """Read the cluster every REFRESH_EVERY seconds until cancelled or stopped."""
        while not self.stopping:
            try:
                await self.refresh()
                self.unreachable = None
            except (RedisError, OSError) as exc:
                self.unreachable = describe_exception(exc)
            if not self.stopping:
                await asyncio.sleep(REFRESH_EVERY)

    def stop(self) -> None:
        """End run() at its next turn: a cancellation alone may be swallowed by the Redis
        client (see Publisher.stop)."""
        self.stopping = True

    async def refresh(self) -> None:
        p = self.prefix
        # A key is named by its raw bytes; what is shown of it is escaped (_text).
        raw_names = [_raw(raw) for raw in await self.client.zrange(f"{p}procs", 0, -1)]
        names = [_text(raw) for raw in raw_names]
        pipe = self.client.pipeline(transaction=True)  # the figures at one instant
        for raw in raw_names:
            pipe.get(f"{p}proc:".encode() + _raw(raw))
        pipe.hmget(f"{p}n", "unfinished", "queued", "done", "failed", "filtered", "unfetched")
        pipe.zcard(f"{p}inflight")
        pipe.scard(f"{p}seen")
        pipe.zrange(f"{p}ready", 0, -1, withscores=True)
        pipe.hgetall(f"{p}busy")
        pipe.time()
        reading = self._events_from
        if reading is not None:
            pipe.xread({f"{p}events": reading}, count=READ_MOST)
        results = await pipe.execute()
        stream = results.pop() if reading is not None else None
        *blobs, counts, in_flight, seen, ready, busy, now = results
        unfinished, queued, done, failed, filtered, unfetched = (redis_count(x) for x in counts)
        self.figures = ClusterFigures(
            unfinished, queued, done, failed, filtered, redis_count(in_flight), redis_count(seen),
            unfetched=unfetched,
        )  # fmt: skip
        self._take_blobs(names, blobs)
        if reading is None:  # the view's past begins now: the entries from here on
            self._events_from = f"{now[0] * 1000 + now[1] // 1000}-0"
        else:
            self._take_past(stream)
        gone = [name for name, raw in zip(raw_names, blobs, strict=True) if raw is None]
        if gone:  # their keys expired: the processes ended or died
            await self.client.zrem(f"{p}procs", *gone)
        await self._read_hosts(ready, busy, now)
        await self._send_wants()

    def _take_past(self, stream: object) -> None:
        """The processes' batches of events read from the stream, into the past."""
        if not self._blobs:
            return
        phase = self._phase({blob.snapshot.phase for blob in self._blobs.values()})
        if self._past is None:
            epochs = [b.epoch for b in self._blobs.values() if b.epoch is not None]
            self._past = ClusterPast(self.config, min(epochs, default=time.time()))
        past = self._past
        for entry_id, fields in _entries(stream):
            self._events_from = entry_id
            name = _text(fields.get(b"name", b""))
            if name not in self._blobs:
                continue  # a process this view does not (or no longer) know
            past.take(self._numbers[name], fields, phase.value)
        running = [
            self._numbers[name]
            for name, blob in self._blobs.items()
            if blob.snapshot.phase in (Phase.RUNNING, Phase.PAUSED)
        ]
        past.release(running, time.time() - past.epoch, self.snapshot(None, rows=False))

    async def _send_wants(self) -> None:
        """Tell each process the rows this view shows of it (none: it still watches,
        and sends its events), kept for as long as a publication is: a view that went
        away stops asking by itself."""
        pipe = self.client.pipeline(transaction=False)
        for process in self.processes:
            key = f"{self.prefix}want:{process.name}"
            pipe.hset(key, self._viewer, json.dumps(self._asked.get(process.number, [])))
            pipe.expire(key, PUBLISHED_FOR)
        await pipe.execute()

    def _take_blobs(self, names: list[str], blobs: list[bytes | None]) -> None:
        live: dict[str, Published] = {}
        for name, raw in zip(names, blobs, strict=True):
            if raw is None:
                continue  # expired: the process ended or died
            try:
                blob = published_from(raw)
            except BadMessage as exc:  # left out, and said, not a crash
                self.bad_entries += 1
                self.bad = f"bad entry in Redis for {printable(name, 60)}: {exc}"
                continue
            self._numbers.setdefault(name, len(self._numbers))
            live[name] = blob
            self._config = self._config or blob.config
        self._blobs = live
        self.processes = tuple(
            ProcessView(
                self._numbers[name], printable(name), b.snapshot.phase,
                b.snapshot.live_workers, b.unreachable,
            )
            for name, b in sorted(live.items(), key=lambda item: self._numbers[item[0]])
        )  # fmt: skip
        if live:
            self.ready.set()

    async def _read_hosts(
        self,
        ready: list[tuple[bytes | str, float]],
        busy: dict[bytes | str, bytes],
        now: list[int],
    ) -> None:
        now_ms = now[0] * 1000 + now[1] // 1000
        scores = {_raw(host): score for host, score in ready}
        busy_by = {_raw(host): redis_count(n) for host, n in busy.items()}
        hosts = sorted(set(scores) | set(busy_by))
        pipe = self.client.pipeline(transaction=False)
        for host in hosts:
            pipe.llen(f"{self.prefix}q:".encode() + host)
        lengths = await pipe.execute()
        self.hosts = tuple(
            HostReadiness(
                _text(host), redis_count(length), busy_by.get(host, 0),
                None if host not in scores else max(scores[host] - now_ms, 0) / 1000,
            )
            for host, length in zip(hosts, lengths, strict=True)
        )  # fmt: skip

    def process_of(self, worker_id: int) -> tuple[str, int] | None:
        """(process name, its own worker id) for a worker id of this view."""
        number, local = divmod(worker_id, ID_STRIDE)
        for process in self.processes:
            if process.number == number:
                return process.name, local
        return None


class ClusterControls:
    """The keys' controls, sent to the processes of a ClusterCrawl: CrawlControls."""

    def __init__(self, cluster: ClusterCrawl) -> None:
        self.cluster = cluster
        self._sending: set[asyncio.Task[None]] = set()

    def _send(self, name: str, **control: object) -> None:
        key = f"{self.cluster.prefix}ctl:{name}"
        task = asyncio.get_running_loop().create_task(self._push(key, json.dumps(control)))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _push(self, key: str, text: str) -> None:
        with contextlib.suppress(RedisError, OSError):  # the view says Redis is lost
            pipe = self.cluster.client.pipeline(transaction=True)
            pipe.rpush(key, text)
            pipe.expire(key, 60)  # a control for a process that is gone does not linger
            await pipe.execute()

    def _to_all(self, **control: object) -> None:
        for process in self.cluster.processes:
            self._send(process.name, **control)

    def _to_worker(self, op: str, worker_id: int) -> bool:
        found = self.cluster.process_of(worker_id)
        if found is None:
            return False
        name, local = found
        self._send(name, op=op, worker=local)
        return True

    def pause_all(self) -> None:
        self._to_all(op="pause_all")

    def resume_all(self) -> None:
        self._to_all(op="resume_all")

    def pause(self, worker_id: int) -> bool:
        return self._to_worker("pause", worker_id)

    def resume(self, worker_id: int) -> bool:
        return self._to_worker("resume", worker_id)

    def cancel_worker(self, worker_id: int) -> bool:
        return self._to_worker("cancel_worker", worker_id)

    def add_worker(self) -> object:
        """A worker more on the process with the fewest."""
        live = [p for p in self.cluster.processes if p.phase in (Phase.RUNNING, Phase.PAUSED)]
        if not live:
            return None
        target = min(live, key=lambda p: p.live_workers)
        self._send(target.name, op="add_worker")
        return target.name

    def remove_worker(self, worker_id: int | None = None) -> object:
        if worker_id is not None:
            return self._to_worker("remove_worker", worker_id) or None
        live = [p for p in self.cluster.processes if p.live_workers]
        if not live:
            return None
        target = max(live, key=lambda p: p.live_workers)
        self._send(target.name, op="remove_worker", worker=None)
        return target.name

    def set_slowmo(self, seconds: float) -> None:
        self._to_all(op="set_slowmo", seconds=seconds)

    def stop(self) -> None:
        self._to_all(op="stop")

    # A host is crawled by every process: its controls go to all of them.

    def block_host(self, origin: str) -> bool:
        self._to_all(op="block_host", host=origin)
        return bool(self.cluster.processes)

    def unblock_host(self, origin: str) -> bool:
        self._to_all(op="unblock_host", host=origin)
        return bool(self.cluster.processes)

    def set_host_delay(self, origin: str, seconds: float) -> None:
        self._to_all(op="set_host_delay", host=origin, seconds=seconds)

    def set_host_limit(self, origin: str, limit: int) -> None:
        self._to_all(op="set_host_limit", host=origin, limit=limit)


def _entries(stream: object) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The entries of an XREAD of one stream, in either of redis-py's shapes; what is
    not an entry is passed over."""
    if isinstance(stream, dict):  # RESP3: {key: [entries]}
        stream = [[key, value] for key, value in stream.items()]
    if not isinstance(stream, list) or not stream:
        return []
    found = stream[0][1] if isinstance(stream[0], list | tuple) and len(stream[0]) == 2 else []
    return [
        (entry[0], entry[1])
        for entry in found
        if isinstance(entry, list | tuple) and len(entry) == 2 and isinstance(entry[1], dict)
    ]


def _merged_timing(snaps: list[tuple[int, Snapshot]], elapsed: float) -> dict[str, Any]:
    """Loop health and warnings of every process as one view: each loop's lag is its
    own, so the worst is shown; holds and warnings are renumbered as the workers are, and
    moved onto the view's clock."""
    holds = sorted(
        (
            replace(hold, worker=number * ID_STRIDE + hold.worker, t=hold.t + elapsed - s.elapsed)
            for number, s in snaps
            for hold in s.holds
        ),
        key=lambda hold: hold.seconds,
        reverse=True,
    )
    warnings = sorted(
        (
            replace(
                lint,
                worker=None if lint.worker is None else number * ID_STRIDE + lint.worker,
                t=lint.t + elapsed - s.elapsed,
            )
            for number, s in snaps
            for lint in s.warnings
        ),
        key=lambda lint: lint.t,
    )
    return {
        "loop_lag_p50": max((s.loop_lag_p50 for _, s in snaps), default=0.0),
        "loop_lag_p99": max((s.loop_lag_p99 for _, s in snaps), default=0.0),
        "holds": tuple(holds[:MAX_HOLDS]),
        "warnings": tuple(warnings[-MAX_WARNINGS:]),
        "warning_count": sum(s.warning_count for _, s in snaps),
        "verdict": _merged_verdict(snaps),
    }


def _merged_verdict(snaps: list[tuple[int, Snapshot]]) -> str:
    """Each process's verdict as one line: the line itself when all say the same cause,
    else each process's cause by its number."""
    said = [(number, s.verdict) for number, s in snaps if s.verdict]
    if not said:
        return ""
    causes = {line.split(":", 1)[0] for _, line in said}
    if len(causes) == 1:
        first = said[0][1]
        return first if len(said) == 1 else f"every process {first}"
    return "processes differ: " + ", ".join(f"#{n} {line.split(':', 1)[0]}" for n, line in said)
