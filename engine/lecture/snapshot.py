"""A lecture stage at one step, copied out as plain data: what the lecture screen draws.

The stage engines (stage 1's callbacks, stage 2's generator coroutines) are sampled into
these frozen dataclasses of strings, numbers and tuples, so a step means the same drawn
live, written to a recording (`lecture --record`), or sent to a viewer in another process
(`lecture --monitor`). Every figure and sentence the screen shows is computed when the
stage is sampled (engine/lecture/live.py); `to_plain` and `from_plain` turn a snapshot
into JSON-ready dicts and back, and `from_plain` is the checked gate of engine/exchange/plain.py:
a value from a file or a socket is checked field by field and its text escaped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from ..exchange.plain import BadMessage, decode
from ..observe.snapshot import Accounting, Phase

QUEUE_ITEMS = 10  # the queue's first URLs a snapshot holds (the panel shows 4 and a count)
# What a snapshot from a file or a socket may hold in any list: far more than a stage has
# (its workers, sockets and timers number max_tasks or so), few enough to draw.
MOST_ROWS = 10_000
MOST_LINKS = 64  # a generator chain's depth (stage_generators.suspension stops there)


class Engine(StrEnum):
    """The stages a lecture screen steps (stage 3 is asyncio's loop: not ours to step)."""

    CALLBACKS = "callbacks"
    GENERATORS = "generators"


@dataclass(frozen=True, slots=True)
class Watched:
    """A socket registered with the selector, and the callback it will run."""

    fd: int
    events: str  # "read" or "write"
    callback: str
    # The fields of the object the callback belongs to (a Fetcher: where stage 1 keeps
    # the state a coroutine would keep in its frame), as short reprs.
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Timer:
    due: float  # seconds from the moment sampled
    callback: str


@dataclass(frozen=True, slots=True)
class Slot:
    """Stage 1's place for one fetch in flight (a worker's state labels)."""

    id: int
    state: str
    url: str | None  # shortened: the site's origin left out


@dataclass(frozen=True, slots=True)
class LoopInsides:
    """The selector loop: what it watches, its timers and ready queue, the fetch slots."""

    registered: tuple[Watched, ...]
    timers: tuple[Timer, ...]  # soonest first
    ready: tuple[str, ...]  # callbacks to run next, in order
    slots: tuple[Slot, ...]
    watching: int  # sockets the selector watches
    next_timer: float | None  # seconds until the soonest live timer


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One generator on a task's yield-from chain (figure 5.3)."""

    function: str
    file: str
    line: int  # gi_frame.f_lineno
    lasti: int  # gi_frame.f_lasti


@dataclass(frozen=True, slots=True)
class TaskInsides:
    """Stage 2: one Task, its generator chain, and the Future it waits on."""

    name: str
    state: str  # the worker's state label, or the crawl's phase, "done", "cancelled"
    url: str | None  # the URL a worker holds, shortened
    steps: int  # send()/throw() calls so far
    links: tuple[ChainLink, ...]
    waits_on: str | None  # the Future's repr
    resumed: bool  # the task the last step resumed
    # The frame where its own code waits: its function, and its locals as short reprs.
    frame: str = ""
    locals: tuple[tuple[str, str], ...] = ()
    callbacks: tuple[str, ...] = ()  # what runs when the Future it waits on is resolved


@dataclass(frozen=True, slots=True)
class QueueInsides:
    items: tuple[str, ...]  # the first QUEUE_ITEMS URLs waiting, first out first
    size: int  # URLs waiting
    unfinished: int
    getters: tuple[str, ...]  # who waits in get() (stage 2), or the idle slots (stage 1)
    join: str  # the join Future's repr, or how stage 1 knows it is done
    getters_title: str = "getters (waiting in get())"


def task_shown(name: str) -> str:
    """A stage-2 task's name as the panels show it: "robots http://host:port" is
    "robots.txt" (the host is the only one crawled)."""
    return "robots.txt" if name.startswith("robots ") else name


@dataclass(frozen=True, slots=True)
class Told:
    """One loop callback, understood: the engine's terse line, whom it concerns, and the
    sentence that explains it in the chapter's terms (narration.py)."""

    raw: str
    task: str | None
    sentence: str


@dataclass(frozen=True, slots=True)
class Fetched:
    """One of the stage's latest fetch results."""

    url: str  # shortened
    status: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class StageSnapshot:
    engine: Engine
    steps: int  # callbacks run so far
    phase: Phase
    over: bool  # the crawl ended and the loop has nothing left to run
    error: str | None  # a callback's bug that ended the crawl
    accounting: Accounting
    loop: LoopInsides
    tasks: tuple[TaskInsides, ...]  # stage 2 only
    queue: QueueInsides
    recent: tuple[Told, ...]  # the latest steps, newest last
    fetched: tuple[Fetched, ...]  # the latest fetch results, newest last

    def to_plain(self) -> dict[str, Any]:
        """Dicts, lists, strings and numbers only: what json.dumps takes as it is."""
        return asdict(self)

    @classmethod
    def from_plain(cls, plain: object, where: str = "snapshot") -> StageSnapshot:
        """The inverse of to_plain, for data from another process or a file: BadMessage
        names the first field that is wrong; every string comes back escaped."""
        snap: StageSnapshot = decode(cls, plain, where)
        if min(snap.steps, snap.queue.size, snap.queue.unfinished) < 0:
            raise BadMessage(f"{where} has a count below 0")
        loop, queue = snap.loop, snap.queue
        rows = {"loop.registered": loop.registered, "loop.timers": loop.timers,
                "loop.ready": loop.ready, "loop.slots": loop.slots, "tasks": snap.tasks,
                "queue.items": queue.items, "queue.getters": queue.getters,
                "recent": snap.recent, "fetched": snap.fetched}  # fmt: skip
        for name, held in rows.items():
            if len(held) > MOST_ROWS:
                raise BadMessage(f"{where}.{name} has more than {MOST_ROWS} entries")
        if any(len(task.links) > MOST_LINKS for task in snap.tasks):
            raise BadMessage(f"{where}.tasks has a chain deeper than {MOST_LINKS}")
        if any(len(w.fields) > MOST_LINKS for w in loop.registered):
            raise BadMessage(f"{where}.loop.registered has more than {MOST_LINKS} fields")
        if any(len(t.locals) > MOST_LINKS or len(t.callbacks) > MOST_LINKS for t in snap.tasks):
            raise BadMessage(f"{where}.tasks has more than {MOST_LINKS} locals or callbacks")
        return snap
