"""One of the chapter's first two stages, crawling on screen, a callback at a time.

The lecture engines run their own selector loops and never block when asked for one
step with `loop.step(0)`, so this screen drives them from a Textual timer on the app's
thread: a few callbacks a frame while running, exactly one per key in step mode. The
demo site runs on the app's asyncio loop, which serves it between frames. No thread
touches the engine, so the panels read its plain state with no locking.

In step mode the loop's clock is held between keys. A key whose step must wait for the
network lets the clock run until the step comes; a key pressed when only a timer can
come next (no socket watched, a worker backing off) jumps the clock to that timer.
Either way each `n` is one step, and the narration says which.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.stage_callbacks import CallbackCrawler, show_stack_ripping
from crawlscope.engine.lecture.stage_generators import (
    GeneratorCrawler,
    Task,
    show_coroutine_traceback,
    suspension,
)
from crawlscope.engine.lecture.stages import create
from crawlscope.engine.lecture.steps import Step
from crawlscope.engine.politeness import origin_of
from crawlscope.engine.snapshot import Accounting, Phase
from crawlscope.engine.text import printable

from ..widgets.keys_footer import KeysFooter
from .narration import Narrated, narrate
from .widgets.loop_panel import LoopPanel, LoopView, SlotView
from .widgets.queue_insides import QueueInsides, QueueInsidesView
from .widgets.step_narration import StepNarration
from .widgets.task_chains import LinkView, TaskChains, TaskView
from .widgets.traceback_screen import TracebackScreen

LectureCrawler = CallbackCrawler | GeneratorCrawler
OVER = frozenset({Phase.FINISHED, Phase.STOPPED})
FRAMES_PER_SECOND = 15.0
# Callbacks run per frame while running: slow enough to follow, up to a quick finish.
SPEEDS = (1, 2, 4, 16, 64)
STAGE_TITLES = {
    "callbacks": "stage 1 · callbacks on a selector loop",
    "generators": "stage 2 · generator coroutines, a Future and a Task",
}
# The same, for a narrow terminal.
SHORT_TITLES = {"callbacks": "stage 1 · callbacks", "generators": "stage 2 · generators"}
RECENT_STEPS = 12
# What ← can step back through: the screens of this many steps (a few kB each).
LOOK_BACK = 500
# Narrower than this (columns), the status line and the footer are made compact.
NARROW = 100
RIPPED = (
    "An exception raised in the parser, called from a callback. The traceback starts at "
    "the event loop: the code that began this fetch (start, dispatch, begin, fetch) is "
    "not in it, because those frames returned long before the socket became readable. "
    "That is the stack ripping the chapter describes."
)
WHOLE = (
    "The same exception with coroutines: the traceback runs from the worker through "
    "fetch down to the parser, because a suspended generator keeps its frame, so the "
    "stack survives every wait."
)
# Masks socket numbers in what reproducible screens show (they differ from run to run).
_FD = re.compile(r"socket \d+")


@dataclass(frozen=True, slots=True)
class Frame:
    """What the panels showed after a step: kept so ← can show it again. The loop cannot
    run backwards (its sockets have moved on), so stepping back is looking back."""

    steps: int
    accounting: Accounting
    main: LoopView | tuple[TaskView, ...]
    queue: QueueInsidesView
    recent: tuple[Narrated, ...]


class StageScreen(Screen[None]):
    """Crawl `roots` with the named lecture engine, showing the loop's insides."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Short words: with the app's keys they must all fit in a footer 80 columns wide.
        Binding("n", "step", "Step"),
        Binding("p,space", "toggle_run", "Run/Freeze", key_display="p"),
        Binding("right_square_bracket", "speed(1)", "Faster", key_display="]"),
        Binding("left_square_bracket", "speed(-1)", "Slower", key_display="["),
        Binding("t", "traceback", "Traceback"),
    ]

    def __init__(
        self,
        engine: str,
        roots: Sequence[str],
        make_config: Callable[[Sequence[str]], CrawlConfig],
        *,
        stepping: bool = True,
        intro: str = "",
        reproducible: bool = False,
    ) -> None:
        """`stepping`: start frozen, a callback per n key. `reproducible` leaves out the
        figures that differ from run to run (ports, fds, line offsets), for snapshots."""
        super().__init__()
        if engine not in STAGE_TITLES:
            raise ValueError(f"step mode needs a lecture engine, not {engine!r}")
        self.engine = engine
        self.roots = tuple(roots)
        self.make_config = make_config
        self.stepping = stepping
        self.intro = intro
        self.reproducible = reproducible
        self.speed = 2
        self.steps = 0  # callbacks run so far
        self.redraws = 0  # times the panels were drawn (frozen, none until a key)
        self.wanted = 0  # steps asked for by n and not yet run (the network may be slow)
        self.error: str | None = None
        self.recent: deque[Narrated] = deque(maxlen=RECENT_STEPS)
        self.history: deque[Frame] = deque(maxlen=LOOK_BACK)  # the newest is the live one
        self.looking: int | None = None  # the index in history shown by ←; None: live
        self.origin = origin_of(self.roots[0])
        self.crawler: LectureCrawler = self._build()
        self._timer: Timer | None = None

    def _build(self) -> LectureCrawler:
        crawler = create(self.engine, self.make_config(self.roots), on_step=self._on_step)
        assert isinstance(crawler, CallbackCrawler | GeneratorCrawler)
        return crawler

    # ---- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="stage-status")
        if self.intro:
            yield Static(Text(self.intro), id="stage-intro")
        with Container(id="stage-panels"):
            if self.engine == "generators":
                chains = TaskChains(id="stage-main")
                chains.border_title = "tasks: each generator's yield-from chain (figure 5.3)"
                chains.frozen = self.reproducible
                main: TaskChains | LoopPanel = chains
            else:
                main = LoopPanel(id="stage-main")
                main.border_title = "the event loop: registered callbacks and timers"
            yield main
            with Vertical(id="stage-side"):
                queue = QueueInsides(id="stage-queue")
                queue.border_title = (
                    "the queue's insides"
                    if self.engine == "generators"
                    else ("the URLs to do (stage 1 has no Queue)")
                )
                yield queue
                told = StepNarration(id="stage-narration")
                told.border_title = "what just happened"
                yield told
        yield KeysFooter()

    def on_mount(self) -> None:
        self._status = self.query_one("#stage-status", Static)
        self._main = self.query_one("#stage-main")
        self._queue = self.query_one(QueueInsides)
        self._told = self.query_one(StepNarration)
        if self.stepping:
            self.crawler.loop.hold_clock()
        self.crawler.start()
        self._timer = self.set_interval(1 / FRAMES_PER_SECOND, self._tick)
        self._redraw()

    def on_unmount(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self.close()

    def close(self) -> None:
        """Stop the crawl (its sockets closed, held URLs back on the queue) and the loop."""
        crawler = self.crawler
        if crawler.phase not in OVER and self.error is None:
            crawler.stop()
        crawler.loop.close()

    # ---- driving the loop ------------------------------------------------------------

    def _on_step(self, step: Step) -> None:
        told = narrate(step, self.origin)
        if self.reproducible:
            # Socket numbers and the demo site's port differ from run to run.
            def same_each_run(text: str) -> str:
                return _FD.sub("socket N", text.replace(self.origin, "http://demo"))

            task = None if told.task is None else same_each_run(told.task)
            told = Narrated(same_each_run(told.raw), task, same_each_run(told.sentence))
        self.recent.append(told)

    @property
    def over(self) -> bool:
        return self.error is not None or (
            self.crawler.phase in OVER and not self.crawler.loop.ready
        )

    def _step_once(self, jump: bool = False) -> bool:
        """Run one callback if one is ready now (never waits); True if one ran. With
        `jump`, a timer is never waited for (see SelectorLoop.step)."""
        try:
            handle = self.crawler.loop.step(0, jump=jump)
        except Exception as exc:
            # A bug in a callback ends the crawl, as in the chapter; the screen says so.
            self.error = printable(f"{type(exc).__name__}: {exc}", 200)
            self.wanted = 0
            return False
        if handle is None:
            return False
        self.steps += 1
        return True

    def _take_wanted_step(self) -> None:
        """Run the step n asked for, if one can run now.

        The clock is held between steps, and runs only while a step is wanted and not
        yet run: then a fetch waits on the network in real time, and its deadline still
        comes if the server never answers. A timer with no socket watched is jumped to.
        """
        loop = self.crawler.loop
        if self._step_once(jump=True):
            self.wanted -= 1
        if self.wanted and not self.over:
            loop.release_clock()
        else:
            loop.hold_clock()

    def _tick(self) -> None:
        if (
            not self.is_mounted
            or self.over
            or (self.stepping and not self.wanted)
            or self.looking is not None
        ):
            # Frozen or over: nothing changes until a key, and each key redraws. Drawing
            # the same screen 15 times a second would only keep the app from ever idling.
            return
        if self.stepping:
            self._take_wanted_step()
        else:
            for _ in range(self.speed):
                if not self._step_once() or self.over:
                    break
        self._redraw()

    # ---- keys ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "step" and self.looking is not None:
            return True  # forward again through the steps looked back at
        if action in ("step", "toggle_run", "speed") and self.over:
            return None  # shown greyed out: the crawl is over
        return True

    @property
    def can_step_back(self) -> bool:
        return (len(self.history) - 1 if self.looking is None else self.looking) > 0

    def step_back(self) -> None:
        """Show the screen as it was one step before (←); freezes a running stage."""
        if not self.can_step_back:
            return
        if not self.stepping:
            self.stepping = True
        self.wanted = 0  # a step asked for and not yet come is no longer wanted
        self.crawler.loop.hold_clock()
        self.looking = (len(self.history) if self.looking is None else self.looking + 1) - 2
        self._redraw()

    def action_step(self) -> None:
        """Freeze (if running) and run one more callback; after ←, the next step shown
        is the one looked back from, until the live one is reached again."""
        if self.looking is not None:
            self.looking += 1
            if self.looking >= len(self.history) - 1:
                self.looking = None
            self._redraw()
            return
        if not self.stepping:
            self.stepping = True
            self.crawler.loop.hold_clock()
        self.wanted += 1
        self._take_wanted_step()
        self._redraw()

    def action_toggle_run(self) -> None:
        if self.looking is not None:
            self.looking = None  # runs on from where the crawl really is
            self.stepping = True
        self.stepping = not self.stepping
        self.wanted = 0
        if self.stepping:
            self.crawler.loop.hold_clock()
        else:
            self.crawler.loop.release_clock()
        self._redraw()

    def action_speed(self, direction: int) -> None:
        index = SPEEDS.index(self.speed) if self.speed in SPEEDS else 1
        self.speed = SPEEDS[min(max(index + direction, 0), len(SPEEDS) - 1)]
        self._redraw()

    def action_traceback(self) -> None:
        """Crawl the root again with a parser that raises, and show the traceback."""
        self.run_worker(self._traceback(), name="traceback", group="traceback", exclusive=True)

    async def _traceback(self) -> None:
        root = self.roots[0]
        if self.engine == "callbacks":
            make, title, explanation = show_stack_ripping, "stage 1: stack ripping", RIPPED
        else:
            make, title, explanation = show_coroutine_traceback, "stage 2: a whole stack", WHOLE
        self.notify("crawling once more with a parser that raises…", timeout=3)
        try:
            # Its own crawler and loop, blocking, so in a thread: the demo site it fetches
            # from is served by this thread's loop, which must stay free to answer.
            text = await asyncio.to_thread(make, root)
        except Exception as exc:
            self.notify(printable(f"{type(exc).__name__}: {exc}", 200), severity="error")
            return
        await self.app.push_screen(TracebackScreen(title, explanation, text))

    # ---- what the panels show --------------------------------------------------------

    def _redraw(self) -> None:
        self.redraws += 1
        if self.looking is None:
            self._keep(self._live_frame())
        frame = self._frame()
        self._status.update(self._status_text())
        if isinstance(frame.main, LoopView):
            assert isinstance(self._main, LoopPanel)
            self._main.show(frame.main)
        else:
            assert isinstance(self._main, TaskChains)
            self._main.show(frame.main)
        self._queue.show(frame.queue)
        self._told.show(frame.steps, frame.recent, self._note())
        self.refresh_bindings()

    def _live_frame(self) -> Frame:
        crawler = self.crawler
        main: LoopView | tuple[TaskView, ...]
        if isinstance(crawler, GeneratorCrawler):
            main, queue = self._tasks(crawler), self._generator_queue(crawler)
        else:
            main, queue = self._loop_view(crawler), self._callback_queue(crawler)
        return Frame(self.steps, crawler.accounting(), main, queue, tuple(self.recent))

    def _keep(self, frame: Frame) -> None:
        """History holds one frame per step: a redraw with no step since replaces it."""
        if self.history and self.history[-1].steps == frame.steps:
            self.history[-1] = frame
        else:
            self.history.append(frame)

    def _frame(self) -> Frame:
        if self.looking is None:
            return self.history[-1]
        return self.history[self.looking]

    def _note(self) -> str:
        if self.looking is not None:
            return ""  # the panels are as they were; the status line says it is a look back
        if self.error:
            return f"The crawl failed: {self.error}"
        if self.over:
            return "The crawl is over: every URL is done, failed or filtered."
        if self.stepping and self.wanted:
            return self._waiting_note()
        return ""

    def _waiting_note(self) -> str:
        loop = self.crawler.loop
        watched = loop.watching()
        soonest = loop.next_timer()
        if not watched:
            if soonest is None:
                return "Nothing is ready, and no socket or timer is left to wait for."
            # step() jumps to the timer at once, so this shows for a moment at most.
            return "Nothing is ready and no socket is watched: the next step is a timer."
        sockets = f"{watched} socket{'s' if watched != 1 else ''}"
        note = (
            f"Waiting for the network: select() watches {sockets} and none is ready yet. "
            "The loop's clock runs while it waits"
        )
        if soonest is None or self.reproducible:
            return note + "."
        return note + f"; the next timer is due in {max(0.0, soonest[0]):.1f} s."

    def _status_text(self) -> Text:
        """One state word, then what a lecturer reads off it, most needed first: on a
        narrow terminal the line is cut from the right."""
        narrow = self.size.width < NARROW
        gap = "  " if narrow else "   "
        word, style = self._mode()
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f" {word} ", style)
        frame = self._frame() if self.history else None
        line.append(f"{gap}step {frame.steps if frame else self.steps}", "bold")
        if self.looking is not None:
            line.append(f" of {self.steps} · n forward, p runs on", "bold")
        if word == "RUNNING":
            line.append(f" · {self.speed} a frame", "bold")
        line.append(gap + (SHORT_TITLES if narrow else STAGE_TITLES)[self.engine], "bold")
        a = frame.accounting if frame else self.crawler.accounting()
        line.append(f"{gap}{a.done} done  {a.failed} failed  {a.queued} queued", "dim")
        return line

    def _mode(self) -> tuple[str, str]:
        """The one word for what the stage is doing, and its style."""
        if self.looking is not None:
            return "LOOKING BACK", "bold black on yellow"
        if self.error is not None:
            return "FAILED", "bold white on red"
        if self.over:
            return self.crawler.phase.value.upper(), "bold white on blue"
        if self.stepping:
            return "STEP MODE", "bold white on magenta"
        return "RUNNING", "bold black on green"

    def on_resize(self) -> None:
        # Every key must fit in the footer at 80 columns: the palette's key goes first.
        footer = self.query_one(Footer)
        narrow = self.size.width < NARROW
        footer.compact = narrow
        footer.show_command_palette = not narrow
        if self.is_mounted and hasattr(self, "_status"):
            self._status.update(self._status_text())

    def _short(self, url: str | None) -> str | None:
        if url is None:
            return None
        return url.replace(self.origin, "") or "/"

    def _tasks(self, crawler: GeneratorCrawler) -> tuple[TaskView, ...]:
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
            views.append(
                TaskView(
                    # "robots http://host:port": the host is the only one crawled.
                    name="robots.txt" if task.name.startswith("robots ") else task.name,
                    state=state,
                    url=self._short(url),
                    steps=task.steps,
                    links=tuple(LinkView(k.function, k.file, k.line, k.lasti) for k in links),
                    waits_on=None if future is None else self._future(future),
                    resumed=task.name == resumed,
                )
            )
        return tuple(views)

    def _future(self, future: object) -> str:
        text = repr(future).replace(self.origin, "")
        return _FD.sub("socket N", text) if self.reproducible else text

    def _generator_queue(self, crawler: GeneratorCrawler) -> QueueInsidesView:
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
        items = tuple(self._short(url) or url for url, _ in q.items)
        return QueueInsidesView(items, q.unfinished, getters, join)

    def _callback_queue(self, crawler: CallbackCrawler) -> QueueInsidesView:
        items = tuple(self._short(url) or url for url, _ in crawler.todo)
        idle = tuple(f"slot {slot.id}" for slot in crawler.idle)
        join = "none: dispatch() ends the crawl once todo is empty and every slot is idle"
        return QueueInsidesView(items, crawler.unfinished, idle, join, "idle slots")

    def _loop_view(self, crawler: CallbackCrawler) -> LoopView:
        loop = crawler.loop

        def short(text: str) -> str:
            return text.replace(self.origin, "")

        registered = tuple((fd, ev, short(step.target)) for fd, ev, step in loop.registered())
        timers = tuple((due, short(step.target)) for due, step in loop.timers_due())
        ready = tuple(short(str(step)) for step in loop.pending())
        slots = tuple(
            SlotView(slot.id, slot.state.value, self._short(slot.url))
            for slot in crawler.workers.values()
        )
        return LoopView(registered, timers, ready, slots, self.reproducible)
