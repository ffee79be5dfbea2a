"""One process of a local cluster (`--procs N`): `python -m crawlscope.engine.cluster.child`.

Its parent (local.py) writes one JSON line on its stdin: the crawl's config, the Redis
to join (the password inside the line, never on a command line) and the crawl id. It
crawls as any `--redis` process does, and writes a JSON line per record on its stdout,
each one flushed before Redis counts its URL done, so the parent has every record of a
page the crawl counts. Its stdin stays open: end of file means the parent is gone, and
the process stops as it does on SIGTERM or SIGINT (its leases given back).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import sys

from ..config import CrawlConfig
from ..exchange.config_json import config_from_plain
from ..exchange.plain import BadMessage, decode
from ..observe.text import printable
from ..plan import CrawlEnded, CrawlPlan, PlanError, SharedFrontier
from ..records import STDOUT, describe_fault

SPEC_LIMIT = 1 << 20  # bytes of the first line: a config is a few KB
# The records' pipe to the parent, in bytes: Linux's 64 KB default filled whenever the
# parent was off the CPU, and a full pipe stops the whole crawl of this process in its
# write. 1 MB is what an unprivileged process may ask for (fs.pipe-max-size).
PIPE_BYTES = 1 << 20


def _widen_stdout_pipe() -> None:
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if set_size is not None:
        with contextlib.suppress(OSError):  # not a pipe, or a lower limit: as it is
            fcntl.fcntl(sys.stdout.fileno(), set_size, PIPE_BYTES)


def spec_line(
    config: object, redis_url: str, crawl_id: str, lease: float, patience: float
) -> bytes:
    """The line a parent writes on a child's stdin; `config` is config_to_plain's."""
    spec = {
        "config": config, "redis": redis_url, "crawl_id": crawl_id,
        "lease": lease, "patience": patience,
    }  # fmt: skip
    return json.dumps(spec, ensure_ascii=True).encode() + b"\n"


def parse_spec(
    line: bytes, where: str = "the parent's config"
) -> tuple[CrawlConfig, SharedFrontier]:
    """The config and the shared frontier a spec holds, by the one set of rules a child
    takes them with (its parent checks its own spec with them before starting any);
    BadMessage if the line is not a spec they accept."""
    return config_from_plain(_spec_object(line).get("config"), where), read_spec(line)


def _spec_object(line: bytes) -> dict[str, object]:
    try:
        spec = json.loads(line)
    except ValueError:
        raise BadMessage("the spec is not JSON") from None
    if not isinstance(spec, dict):
        raise BadMessage("the spec is not an object")
    return spec


def read_spec(line: bytes) -> SharedFrontier:
    """The shared frontier a spec names; BadMessage if the line is not a spec."""
    spec = _spec_object(line)
    return SharedFrontier(
        url=_raw_text(spec.get("redis"), "redis"),
        crawl_id=_raw_text(spec.get("crawl_id"), "crawl_id"),
        lease=decode(float, spec.get("lease"), "lease"),
        patience=decode(float, spec.get("patience"), "patience"),
    )


def _raw_text(value: object, where: str) -> str:
    # A URL with its password and a crawl id are used, never drawn: kept as sent.
    if not isinstance(value, str):
        raise BadMessage(f"{where} is not a string")
    return value


async def _watch_parent(stop: asyncio.Event) -> None:
    """Set `stop` when stdin ends: the parent has gone, and no one reads the records."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass
    stop.set()


async def run_child(spec_bytes: bytes) -> int:
    config, shared = parse_spec(spec_bytes)
    plan = CrawlPlan(config, shared=shared, outputs=(STDOUT,), feed_format="jsonl")
    stop, signals = asyncio.Event(), list[int]()

    def on_signal(signum: int) -> None:
        signals.append(signum)
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        async with plan.open() as crawl:
            running = crawl.start()
            watching = asyncio.create_task(_watch_parent(stop))
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            crawl.crawler.stop()
            with contextlib.suppress(asyncio.CancelledError):
                await running
            for task in (watching, stopping):
                task.cancel()
            faults = crawl.crawler.ledger.faults
            notes: list[str] = getattr(crawl.crawler.q, "closing_notes", list)()
    except CrawlEnded:
        return 0
    except PlanError as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 1
    for line in [*dict.fromkeys(describe_fault(f) for f in faults), *notes]:
        print(f"crawlscope: process {os.getpid()}: {printable(line)}", file=sys.stderr)
    if signals:
        return 128 + signals[0]
    return 1 if faults else 0


def main() -> int:
    _widen_stdout_pipe()
    line = sys.stdin.buffer.readline(SPEC_LIMIT)
    if not line.endswith(b"\n"):
        print("crawlscope: a cluster process got no spec from its parent", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_child(line))
    except (BadMessage, ValueError) as exc:
        print(f"crawlscope: a cluster process's spec: {printable(str(exc), 200)}", file=sys.stderr)
        return 2
    except Exception as exc:  # one line, as its parent's are; the status says it failed
        why = printable(f"{type(exc).__name__}: {exc}", 300)
        print(f"crawlscope: process {os.getpid()} failed: {why}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
