"""Warnings about a crawl (lints, as tokio-console calls them): each one a sentence in
the crawl's words that names the worker, the host or the source line it is about.

Plain data, like a snapshot, so a warning means the same on the live screen, in a
recording played back, in the report and over a monitor.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class LintKind(StrEnum):
    LOOP_BLOCKED = "loop-blocked"  # one callback held the event loop past a threshold
    STUCK = "stuck"  # a worker in one state many times longer than its usual
    POLITENESS = "politeness-bound"  # workers idle while URLs wait behind a host's limit
    JOIN_STALLED = "join-stalled"  # the unfinished counter still while every worker waits
    RETRY_STORM = "retry-storm"  # a host failing or timing out in a row


@dataclass(frozen=True, slots=True)
class Lint:
    kind: LintKind
    t: float  # when it was raised, in seconds of the crawl's clock (Snapshot.elapsed's)
    text: str  # one line, e.g. "worker 3 held the loop 180 ms parsing http://…/big"
    worker: int | None = None
    host: str = ""  # an origin, "http://example.com:8080"
    url: str = ""
    line: str = ""  # where the loop was given back, "links.py:212"
