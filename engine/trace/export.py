"""A crawl's events as a Chrome trace (the trace-event format Perfetto and chrome://tracing
open): a track per worker with a slice per state and its URL, a second track per worker
with a slice per fetch, counters for the queue, the unfinished counter and the pages
done, and instant events for warnings and changes of phase.

The input is a recording or a saved flight, already checked line by line on load
(replay.py); times are the crawl's own seconds, written as microseconds from its start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PID = 1  # one process: the crawl (a cluster's processes would each get their own)
FETCHES = 100_000  # a worker's fetch track: its tid plus this, sorted after the states


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def trace_of(start: dict[str, Any], events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The trace of one recording: {"traceEvents": [...], ...}, ready for json.dump."""
    out: list[dict[str, Any]] = []
    roots = list(start.get("config", {}).get("roots", []))
    wall = float(start.get("wall", 0.0))
    out.append(_meta("process_name", 0, {"name": "crawl " + " ".join(roots)}))
    open_states: dict[int, tuple[float, str, str | None]] = {}  # worker -> its state now
    workers: set[int] = set()
    counts: tuple[int, int, int] | None = None
    last_t = 0.0
    for event in events:
        t = float(event["t"])
        last_t = max(last_t, t)
        kind = event["kind"]
        if kind == "state":
            worker = int(event["worker"])
            if worker not in workers:
                workers.add(worker)
                out.append(_meta("thread_name", worker, {"name": f"worker {worker}"}))
                out.append(_meta("thread_sort_index", worker, {"sort_index": 2 * worker}))
                out.append(_meta("thread_name", FETCHES + worker,
                                 {"name": f"worker {worker} fetches"}))  # fmt: skip
                out.append(_meta("thread_sort_index", FETCHES + worker,
                                 {"sort_index": 2 * worker + 1}))  # fmt: skip
            before = open_states.get(worker)
            if before is not None:
                out.append(_slice(worker, *before, t))
            open_states[worker] = (t, str(event["state"]), event.get("url"))
        elif kind == "fetch":
            record = event["record"]
            worker = record.get("worker")
            if worker is None or record.get("filtered") is not None:
                why = {"url": record["url"], "why": record.get("filtered")}
                out.append(_instant("filtered " + str(record["url"]), t, "filtered", why))
            else:
                begin = max(float(record["t_start"]) - wall, 0.0)
                end = max(float(record["t_end"]) - wall, begin)
                args = {k: record.get(k) for k in
                        ("status", "tries", "size", "exception", "next_url", "depth")}  # fmt: skip
                out.append({
                    "name": str(record["url"]), "cat": "fetch", "ph": "X", "ts": _us(begin),
                    "dur": _us(end - begin), "pid": PID, "tid": FETCHES + int(worker),
                    "args": args,
                })  # fmt: skip
        elif kind == "lint":
            lint = event["lint"]
            out.append(_instant(str(lint.get("kind", "warning")), t, "warning", lint))
        elif kind == "phase":
            out.append(_instant(f"phase {event.get('phase', '')}", t, "phase", {}))
        if "queued" in event and "unfinished" in event:
            now = (int(event["queued"]), int(event["unfinished"]), int(event.get("done", 0)))
            if now != counts:
                counts = now
                out.append({
                    "name": "frontier", "ph": "C", "ts": _us(t), "pid": PID,
                    "args": {"queued": now[0], "unfinished": now[1]},
                })  # fmt: skip
                out.append({"name": "pages done", "ph": "C", "ts": _us(t), "pid": PID,
                            "args": {"done": now[2]}})  # fmt: skip
    for worker, before in open_states.items():
        out.append(_slice(worker, *before, last_t))
    return {
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "crawlscope", "roots": roots, "wall": wall},
    }


def _meta(name: str, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": PID, "tid": tid, "args": args}


def _slice(worker: int, begin: float, state: str, url: str | None, end: float) -> dict[str, Any]:
    # The duration as the difference of the two rounded ends: the next slice starts
    # where this one stops, with no overlap made by the rounding.
    ts = _us(begin)
    return {
        "name": state, "cat": "state", "ph": "X", "ts": ts,
        "dur": max(round(_us(end) - ts, 3), 0.0), "pid": PID, "tid": worker,
        "args": {"url": url},
    }  # fmt: skip


def _instant(name: str, t: float, cat: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "cat": cat, "ph": "i", "s": "g", "ts": _us(t), "pid": PID, "tid": 0,
            "args": args}  # fmt: skip
