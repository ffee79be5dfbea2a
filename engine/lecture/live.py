"""A lecture stage crawling in this process, behind the contract of observe.py.

`Stage` builds stage 1's or stage 2's crawler, tells each step in the chapter's terms as
the loop is about to run it (narration.py), drives the loop a callback at a time for
the screen, and samples it into a `StageSnapshot`: the only place that reads the loop's
registered callbacks and timers, the tasks' generator chains, the queue's getters and
the crawler's books. A screen, a recorder and a monitor read only what it gives.
"""

from __future__ import annotations

import asyncio
import re
import reprlib
from collections import deque
from itertools import islice
from typing import Any

from ..config import CrawlConfig
from ..observe.snapshot import Phase
from ..observe.text import printable
from ..records import FetchRecord
from ..report import Crawl
from ..urls import origin_of
from .narration import narrate
from .observe import StageListener, TracebackListener
from .snapshot import (
    QUEUE_ITEMS,
    ChainLink,
    Engine,
    Fetched,
    LoopInsides,
    QueueInsides,
    Slot,
    StageSnapshot,
    TaskInsides,
    Timer,
    Told,
    Watched,
    task_shown,
)
from .stage_callbacks import CallbackCrawler, show_stack_ripping
from .stage_generators import (
    GeneratorCrawler,
    Task,
    own_locals,
    show_coroutine_traceback,
    suspension,
    waiting_callbacks,
)
from .steps import Step

OVER = frozenset({Phase.FINISHED, Phase.STOPPED})
RECENT_STEPS = 12  # steps told in a snapshot, newest last
RECENT_FETCHES = 5  # fetch results in a snapshot
# Socket numbers, in what reproducible screens show (they differ from run to run).
_FD = re.compile(r"socket \d+")
# What a frame's locals or a Fetcher's fields show of each value: enough to read a URL or
# the size of a response, never a whole page.
_VALUES = reprlib.Repr()
_VALUES.maxstring = _VALUES.maxother = 70
_VALUES.maxlist = _VALUES.maxtuple = _VALUES.maxset = _VALUES.maxdict = 4
MOST_FIELDS = 12


def vars_of(owner: object) -> list[tuple[str, Any]]:
    """An object's own fields (a Fetcher's), the links back to the loop and the crawler
    left out: they say nothing of this fetch."""
    fields = getattr(owner, "__dict__", None)
    if not isinstance(fields, dict):
        return []
    return [(k, v) for k, v in fields.items() if k not in ("loop", "crawler")][:MOST_FIELDS]


class Stage:
    """Crawl `config.roots` with the named lecture engine, a step at a time if asked.

    `reproducible` leaves out of the text what differs from run to run (socket numbers,
    the demo site's port), for screens compared with snapshots."""

    def __init__(self, engine: str, config: CrawlConfig, *, reproducible: bool = False) -> None:
        self.engine = Engine(engine)  # ValueError for any other engine
        self.reproducible = reproducible
        self.origin = origin_of(config.roots[0])
        self.recent: deque[Told] = deque(maxlen=RECENT_STEPS)
        self.fetched: deque[Fetched] = deque(maxlen=RECENT_FETCHES)
        self.error: str | None = None
        self.steps = 0  # callbacks run so far
        self.listeners: list[StageListener] = []
        self.traceback_listeners: list[TracebackListener] = []
        self.crawler: CallbackCrawler | GeneratorCrawler
        if self.engine is Engine.CALLBACKS:
            self.crawler = CallbackCrawler(config, self._on_step)
        else:
            self.crawler = GeneratorCrawler(config, self._on_step)
        self.crawler.ledger.record_listeners.append(self._on_record)

    # ---- StageControls -------------------------------------------------------------------

    @property
    def crawl(self) -> Crawl:
        return self.crawler

    def start(self, stepping: bool) -> None:
        if stepping:
            self.crawler.loop.hold_clock()
        self.crawler.start()
        self._tell()

    def step_once(self, jump: bool = False) -> bool:
        try:
            handle = self.crawler.loop.step(0, jump=jump)
        except Exception as exc:
            # A bug in a callback ends the crawl, as in the chapter; the screen says so.
            self.error = printable(f"{type(exc).__name__}: {exc}", 200)
            self._tell()
            return False
        if handle is None:
            return False
        self.steps += 1
        self._tell()
        return True

    def hold_clock(self) -> None:
        self.crawler.loop.hold_clock()

    def release_clock(self) -> None:
        self.crawler.loop.release_clock()

    def close(self) -> None:
        if self.crawler.phase not in OVER and self.error is None:
            self.crawler.stop()
        self.crawler.loop.close()

    def traceback(self) -> str:
        root = self.crawler.config.roots[0]
        if self.engine is Engine.CALLBACKS:
            return show_stack_ripping(root)
        return show_coroutine_traceback(root)

    def shown_traceback(self, text: str) -> None:
        for listener in list(self.traceback_listeners):
            listener(self.engine.value, text)

    # ---- what happens ----------------------------------------------------------------------

    def _on_step(self, step: Step) -> None:
        told = narrate(step, self.origin)
        if self.reproducible:
            told = Told(self._same_each_run(told.raw), told.task and self._same_each_run(told.task),
                        self._same_each_run(told.sentence))  # fmt: skip
        self.recent.append(told)

    def _same_each_run(self, text: str) -> str:
        return _FD.sub("socket N", text.replace(self.origin, "http://demo"))

    def _on_record(self, record: FetchRecord) -> None:
        self.fetched.append(
            Fetched(self._short(record.url) or "/", record.status, record.exception)
        )

    def _tell(self) -> None:
        if self.listeners:
            snap = self.snapshot()
            for listener in list(self.listeners):
                listener(snap)

    # ---- ObservedStage ---------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.error is not None or (
            self.crawler.phase in OVER and not self.crawler.loop.ready
        )

    def snapshot(self) -> StageSnapshot:
        crawler = self.crawler
        if isinstance(crawler, GeneratorCrawler):
            tasks, queue = self._tasks(crawler), self._generator_queue(crawler)
        else:
            tasks, queue = (), self._callback_queue(crawler)
        return StageSnapshot(
            engine=self.engine,
            steps=self.steps,
            phase=crawler.phase,
            over=self.over,
            error=self.error,
            accounting=crawler.accounting(),
            loop=self._loop(),
            tasks=tasks,
            queue=queue,
            recent=tuple(self.recent),
            fetched=tuple(self.fetched),
        )

    def _short(self, url: str | None) -> str | None:
        if url is None:
            return None
        return url.replace(self.origin, "") or "/"

    def _loop(self) -> LoopInsides:
        crawler = self.crawler
        loop = crawler.loop

        def short(text: str) -> str:
            return text.replace(self.origin, "")

        closed = loop.selector.get_map() is None
        owners = {} if closed else loop.watched_by()
        registered = () if closed else tuple(
            Watched(fd, events, short(step.target), self._values(vars_of(owners.get(fd))))
            for fd, events, step in loop.registered()
        )  # fmt: skip
        timers = tuple(Timer(due, short(step.target)) for due, step in loop.timers_due())
        ready = tuple(short(str(step)) for step in loop.pending())
        slots = (
            tuple(
                Slot(slot.id, slot.state.value, self._short(slot.url))
                for slot in crawler.workers.values()
            )
            if isinstance(crawler, CallbackCrawler)
            else ()
        )
        soonest = loop.next_timer()
        return LoopInsides(
            registered,
            timers,
            ready,
            slots,
            loop.watching(),
            None if soonest is None else max(0.0, soonest[0]),
        )

    def _tasks(self, crawler: GeneratorCrawler) -> tuple[TaskInsides, ...]:
        resumed = self.recent[-1].task if self.recent else None
        tasks: list[tuple[Task[Any], str, str | None]] = []
        if crawler.main is not None:
            tasks.append((crawler.main, crawler.phase.value, None))
        for worker in crawler.workers.values():
            if worker.task is not None:
                tasks.append((worker.task, worker.state.value, worker.url))
        for task in crawler.robots.values():
            tasks.append((task, "fetching robots.txt", None))
        views = []
        for task, state, url in tasks:
            if task.done():
                state = "cancelled" if task.cancelled() else "done"
            links, future = suspension(task)
            frame, names = own_locals(task)
            views.append(
                TaskInsides(
                    name=task_shown(task.name),
                    state=state,
                    url=self._short(url),
                    steps=task.steps,
                    links=tuple(ChainLink(k.function, k.file, k.line, k.lasti) for k in links),
                    waits_on=None if future is None else self._future(future),
                    resumed=task.name == resumed,
                    frame=frame,
                    locals=self._values(names),
                    callbacks=() if future is None else waiting_callbacks(future),
                )
            )
        return tuple(views)

    def _future(self, future: object) -> str:
        return self._text(repr(future))

    def _values(self, pairs: list[tuple[str, Any]]) -> tuple[tuple[str, str], ...]:
        """Names and values as a panel shows them: each value a short repr."""
        return tuple((name, self._text(_VALUES.repr(value))) for name, value in pairs)

    def _text(self, text: str) -> str:
        """`text` as the panels write it: the site's origin left out, and for snapshots
        the socket numbers too (they differ from run to run)."""
        text = text.replace(self.origin, "")
        return _FD.sub("socket N", text) if self.reproducible else text

    def _generator_queue(self, crawler: GeneratorCrawler) -> QueueInsides:
        q = crawler.q
        waiting = {
            id(w.task.waiting_on): f"worker-{w.id}"
            for w in crawler.workers.values()
            if w.task is not None and w.task.waiting_on is not None
        }
        getters = tuple(waiting.get(id(g), "?") for g in q.getters if not g.done())
        join = repr(q.join_future)
        if crawler.main is not None and crawler.main.waiting_on is q.join_future:
            join += "  ← crawl waits"
        items = tuple(self._short(url) or url for url, _ in islice(q.items, QUEUE_ITEMS))
        return QueueInsides(items, len(q.items), q.unfinished, getters, join)

    def _callback_queue(self, crawler: CallbackCrawler) -> QueueInsides:
        items = tuple(self._short(url) or url for url, _ in islice(crawler.todo, QUEUE_ITEMS))
        idle = tuple(f"slot {slot.id}" for slot in crawler.idle)
        join = "none: dispatch() ends the crawl once todo is empty and every slot is idle"
        return QueueInsides(items, len(crawler.todo), crawler.unfinished, idle, join, "idle slots")


async def drive(stage: Stage, most: int = 0) -> None:
    """Run `stage` to its end (or `most` steps, if not 0) with no screen, on an asyncio
    loop that serves what it crawls (the demo site, in-process): a step at a time, as
    the screen runs it, so each step is told to the stage's listeners; a timer with no
    socket watched is jumped to, as n does. Stopped if cut."""
    stage.start(stepping=False)
    try:
        while not stage.over and not (most and stage.steps >= most):
            # Nothing ready: the site's answer is on its way, from this very loop.
            await asyncio.sleep(0 if stage.step_once(jump=True) else 0.002)
    finally:
        stage.close()
