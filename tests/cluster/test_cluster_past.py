"""The cluster view's recent past (engine/cluster/past.py): every process's flight recorder
events, renumbered, moved onto one clock and merged in time order, and what is not a
batch of ours left out. Without Redis: the batches as a process makes them."""

from __future__ import annotations

import json
from typing import Any

from crawlscope.engine.cluster.past import ID_STRIDE, ClusterPast, batch_fields
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.trace.events import OTHER, STATE

EPOCH = 1_000_000.0  # the view's 0:00, on the wall clock


def state(t: float, worker: int, name: str = "headers", url: str | None = "http://a/") -> tuple:
    return (STATE, t, worker, name, url, 0, 0, None, None)


def batch(items: list[tuple[Any, ...]], epoch: float, until: float, gap: bool = False) -> dict:
    """A stream entry as redis-py reads it back: bytes for bytes."""
    fields = batch_fields("host:1", items, epoch, until, gap)
    return {k.encode(): v.encode() for k, v in fields.items()}


def kept(past: ClusterPast) -> list[tuple[float, int, str]]:
    return [(round(e["t"], 6), e["worker"], e["state"]) for e in past.ring if e["kind"] == "state"]


def test_two_processes_merge_in_time_on_the_views_clock() -> None:
    past = ClusterPast(CrawlConfig(roots=("http://a/",)), EPOCH)
    # Process 1 began 2 s after process 0: its 0.5 is the view's 2.5.
    past.take(0, batch([state(1.0, 0), state(3.0, 1)], EPOCH, 3.2), "running")
    past.take(1, batch([state(0.5, 0), state(0.9, 3)], EPOCH + 2, 0.95), "running")
    past.release([0, 1], now=3.0)
    # Process 1 has sent up to 2.95 of the view's clock: what comes after waits for it.
    assert kept(past) == [(1.0, 0, "headers"), (2.5, ID_STRIDE, "headers"),
                          (2.9, ID_STRIDE + 3, "headers")]  # fmt: skip
    past.take(1, batch([state(1.1, 0, "parsing")], EPOCH + 2, 1.5), "running")
    past.release([0, 1], now=3.6)
    assert kept(past)[3:] == [(3.0, 1, "headers"), (3.1, ID_STRIDE, "parsing")]


def test_a_process_that_stops_sending_holds_the_view_back_only_so_long() -> None:
    past = ClusterPast(CrawlConfig(roots=("http://a/",)), EPOCH)
    past.take(0, batch([state(1.0, 0)], EPOCH, 10.0), "running")
    past.take(1, batch([state(0.5, 0)], EPOCH, 0.6), "running")
    past.release([0, 1, 2], now=1.5)  # process 2 has sent nothing yet: all wait for it
    assert kept(past) == []
    past.release([0, 1], now=1.5)
    assert kept(past) == [(0.5, ID_STRIDE, "headers")]
    past.release([0, 1], now=6.5)  # 5 s on, process 1 is not waited for
    assert kept(past)[1:] == [(1.0, 0, "headers")]
    # A late batch's events are kept, never before what is already kept.
    past.take(1, batch([state(0.8, 2)], EPOCH, 0.9), "running")
    past.release([0], now=6.6)
    assert kept(past)[2:] == [(1.0, ID_STRIDE + 2, "headers")]
    times = [e["t"] for e in past.ring]
    assert times == sorted(times)


def test_counts_carry_the_clusters_phase_and_a_processs_end_is_left_out() -> None:
    past = ClusterPast(CrawlConfig(roots=("http://a/",)), EPOCH)
    counts = ("finished", 0, 0, 5, 5, 0, 0, 0, 0)
    items = [
        (STATE, 0.1, 0, "stopped", None, 3, 0, None, counts),
        (OTHER, 0.2, {"t": 0.2, "kind": "end", "phase": "finished"}),
        (OTHER, 0.2, {"t": 0.2, "kind": "hosts", "rows": [], "count": 0}),
    ]
    past.take(0, batch(items, EPOCH, 0.3), "running")
    past.release([], now=1.0)
    events = list(past.ring)
    assert [e["kind"] for e in events] == ["state"]
    assert events[0]["phase"] == "running" and events[0]["done"] == 5


def test_a_batch_that_is_not_ours_is_left_out_and_said() -> None:
    past = ClusterPast(CrawlConfig(roots=("http://a/",)), EPOCH)
    good = batch([state(1.0, 0)], EPOCH, 1.0)

    def events(*listed: object) -> bytes:
        return json.dumps(list(listed)).encode()

    hostile: list[dict[bytes, bytes]] = [
        {b"epoch": b"1", b"until": b"1", b"gap": b"0", b"events": b"not json"},
        {**good, b"events": b"{}"},
        {**good, b"epoch": b"nan"},
        {**good, b"until": b"-1"},
        {b"events": b"[]"},
        {
            **good,
            b"events": events({"t": 1.0, "kind": "state", "worker": ID_STRIDE, "state": "headers"}),
        },
        {**good, b"events": events({"t": 2.0, "kind": "phase"}, {"t": 1.0, "kind": "phase"})},
        {**good, b"events": events({"t": 1.0, "kind": "state", "worker": 0, "state": "dancing"})},
        {**good, b"events": events(*[{"t": 0.1, "kind": "phase"}] * 20_001)},
        {**good, b"events": b"[" * 100_000},
    ]
    for fields in hostile:
        past.take(0, fields, "running")
    assert past.bad == len(hostile) and past.problem
    past.take(0, good, "running")  # and the next good one is kept as ever
    past.release([0], now=1.0)
    assert kept(past) == [(1.0, 0, "headers")]


def test_a_batch_that_left_events_out_is_counted() -> None:
    past = ClusterPast(CrawlConfig(roots=("http://a/",)), EPOCH)
    past.take(0, batch([state(1.0, 0)], EPOCH, 1.0, gap=True), "running")
    assert past.gaps == 1
