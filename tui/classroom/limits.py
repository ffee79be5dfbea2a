"""What a class's viewers may cost the serving process, apart from the relay, so the
command line can state the defaults without loading aiohttp."""

from __future__ import annotations

from dataclasses import dataclass

# A viewer is dropped with more than MAX_BEHIND_BYTES waiting for it (here and in the
# kernel's send queue), or with more than SLACK_BYTES waiting for MAX_BEHIND_SECONDS on
# end: a viewer that keeps up has next to nothing waiting whenever it is looked at.
MAX_BEHIND_BYTES = 2 * 1024 * 1024
MAX_BEHIND_SECONDS = 5.0
SLACK_BYTES = 64 * 1024
TOTAL_BEHIND_BYTES = 64 * 1024 * 1024  # in this process, for all the viewers together
MAX_VIEWERS = 500
BATCH_SECONDS = 0.02  # output gathered before it goes to the viewers, as one message
COUNT_EVERY = 0.5  # seconds between two viewer counts sent to the pages
LOOK_EVERY = 0.25  # seconds between two looks at who is behind


@dataclass(frozen=True)
class ClassLimits:
    """What viewers may cost; the relay drops a viewer past them."""

    max_viewers: int = MAX_VIEWERS
    max_behind_bytes: int = MAX_BEHIND_BYTES
    max_behind_seconds: float = MAX_BEHIND_SECONDS
    total_behind_bytes: int = TOTAL_BEHIND_BYTES


DEFAULT_LIMITS = ClassLimits()
