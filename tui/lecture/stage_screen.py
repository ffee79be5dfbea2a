"""One of the chapter's first two stages, crawling on screen, a callback at a time.

The lecture engines run their own selector loops and never block when asked for one
step, so this screen drives them from a Textual timer on the app's thread: a few
callbacks a frame while running, exactly one per key in step mode. The demo site runs
on the app's asyncio loop, which serves it between frames. No thread touches the engine.

The screen knows a stage only through engine/lecture/observe.py: it drives it with the
`StageControls` and draws the `StageSnapshot` it gives, never the loop, the queue or the
tasks themselves, so the same panels show a recording and a stage in another process.

In step mode the loop's clock is held between keys. A key whose step must wait for the
network lets the clock run until the step comes; a key pressed when only a timer can
come next (no socket watched, a worker backing off) jumps the clock to that timer.
Either way each `n` is one step, and the narration says which.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.timer import Timer

from crawlscope.engine.lecture.observe import LiveStage
from crawlscope.engine.lecture.snapshot import StageSnapshot, Told
from crawlscope.engine.lecture.step_lanes import StepFeed
from crawlscope.engine.observe.text import printable
from crawlscope.engine.report import Crawl

from ..widgets.timeline_screen import TimelineScreen
from .stage_panels import StagePanels, Words, ending, over_word
from .widgets.traceback_screen import traceback_screen

FRAMES_PER_SECOND = 15.0
# Callbacks run per frame while running: slow enough to follow, up to a quick finish.
SPEEDS = (1, 2, 4, 16, 64)
# What ← can step back through: the screens of this many steps (a few kB each).
LOOK_BACK = 500
# Steps a frame when running on to where a stage was left (resume).
RESUME_STEPS = 32


class StageScreen(StagePanels):
    """Drive `stage` (a lecture engine crawling here), showing the loop's insides."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Short words: with the app's keys they must all fit in a footer 80 columns wide.
        Binding("n", "step", "Step"),
        Binding("p,space", "toggle_run", "Run/Freeze", key_display="p"),
        Binding("right_square_bracket", "speed(1)", "Faster", key_display="]"),
        Binding("left_square_bracket", "speed(-1)", "Slower", key_display="["),
        Binding("t", "traceback", "Traceback"),
        Binding(
            "l", "lanes", "Lanes", show=False
        ),  # the footer is full at 80 columns: the intros name it
    ]

    def __init__(
        self,
        stage: LiveStage,
        *,
        stepping: bool = True,
        intro: str = "",
        reproducible: bool = False,
        resume: int = 0,
    ) -> None:
        """`stepping`: start frozen, a callback per n key. `resume`: run on at once to
        that step (the lecture back from stage 3, where the lecturer left this stage)."""
        first = stage.snapshot()
        super().__init__(first.engine, intro=intro, reproducible=reproducible)
        self.source = stage
        self.stepping = stepping
        self.speed = 2
        self.redraws = 0  # times the panels were drawn (frozen, none until a key)
        self.wanted = 0  # steps asked for by n and not yet run (the network may be slow)
        self.history: deque[StageSnapshot] = deque(maxlen=LOOK_BACK)  # the newest is live
        self.looking: int | None = None  # the index in history shown by ←; None: live
        self._latest = first
        self._timer: Timer | None = None
        self.resume = resume

    # ---- what the rest of the lecture reads ----------------------------------------------

    @property
    def crawler(self) -> Crawl:
        """The crawl's books, for the report after the screen closes."""
        return self.source.crawl

    @property
    def steps(self) -> int:
        """Callbacks run so far."""
        return self._latest.steps

    @property
    def recent(self) -> tuple[Told, ...]:
        return self._latest.recent

    @property
    def error(self) -> str | None:
        return self._latest.error

    @property
    def over(self) -> bool:
        return self.source.over

    # ---- the screen's life ---------------------------------------------------------------

    def on_mount(self) -> None:
        self.source.start(self.stepping)
        self._timer = self.set_interval(1 / FRAMES_PER_SECOND, self._tick)
        if self.resume:
            self.stepping = True
            self.wanted = self.resume
            self.notify(f"running on to step {self.resume}, where stage 2 was left…",
                        timeout=3)  # fmt: skip
        self._redraw()

    def on_unmount(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self.source.close()

    # ---- driving the loop ----------------------------------------------------------------

    def _step_once(self, jump: bool = False) -> bool:
        ran = self.source.step_once(jump)
        if not ran and self.over:
            self.wanted = 0  # a callback's bug ended the crawl: no step will come
        return ran

    def _take_wanted_step(self) -> None:
        """Run the step n asked for, if one can run now.

        The clock is held between steps, and runs only while a step is wanted and not
        yet run: then a fetch waits on the network in real time, and its deadline still
        comes if the server never answers. A timer with no socket watched is jumped to.
        """
        if self._step_once(jump=True):
            self.wanted -= 1
        if self.wanted and not self.over:
            self.source.release_clock()
        else:
            self.source.hold_clock()

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
            # Back to where the lecture left this stage: as many steps a frame as are
            # ready, each drawn into the history (← goes back through them).
            for _ in range(RESUME_STEPS if self.steps < self.resume else 1):
                self._take_wanted_step()
                if not self.wanted or self.over:
                    break
                if self.steps < self.resume:
                    self._latest = self.source.snapshot()
                    self._keep(self._latest)
        else:
            for _ in range(self.speed):
                if not self._step_once() or self.over:
                    break
        self._redraw()

    # ---- keys ----------------------------------------------------------------------------

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
        self.source.hold_clock()
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
            self.source.hold_clock()
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
            self.source.hold_clock()
        else:
            self.source.release_clock()
        self._redraw()

    def action_speed(self, direction: int) -> None:
        index = SPEEDS.index(self.speed) if self.speed in SPEEDS else 1
        self.speed = SPEEDS[min(max(index + direction, 0), len(SPEEDS) - 1)]
        self._redraw()

    def action_lanes(self) -> None:
        """Who ran when: a lane per fetch slot or task over the steps kept (LOOK_BACK)."""
        feed = StepFeed(lambda: self.history)

        def clock() -> tuple[float, str]:
            snap = self.history[-1] if self.looking is None else self.history[self.looking]
            return float(snap.steps), snap.phase.value

        self.app.push_screen(TimelineScreen(feed, clock, "who ran when", "steps", feed.label))

    def action_traceback(self) -> None:
        """Crawl the root again with a parser that raises, and show the traceback."""
        self.run_worker(self._traceback(), name="traceback", group="traceback", exclusive=True)

    async def _traceback(self) -> None:
        self.notify("crawling once more with a parser that raises…", timeout=3)
        try:
            # Its own crawler and loop, blocking, so in a thread: the demo site it fetches
            # from is served by this thread's loop, which must stay free to answer.
            text = await asyncio.to_thread(self.source.traceback)
        except Exception as exc:
            self.notify(printable(f"{type(exc).__name__}: {exc}", 200), severity="error")
            return
        self.source.shown_traceback(text)  # kept by a recording, for its replay's t
        await self.app.push_screen(traceback_screen(self.engine, text))

    # ---- what the panels show ------------------------------------------------------------

    def _redraw(self) -> None:
        self.redraws += 1
        if self.looking is None:
            self._latest = self.source.snapshot()
            self._keep(self._latest)
        snap = self.history[-1] if self.looking is None else self.history[self.looking]
        self.show(snap, self._note(snap))

    def _keep(self, snap: StageSnapshot) -> None:
        """History holds one snapshot per step: a redraw with no step since replaces it."""
        if self.history and self.history[-1].steps == snap.steps:
            self.history[-1] = snap
        else:
            self.history.append(snap)

    def _note(self, snap: StageSnapshot) -> str:
        if self.looking is not None:
            return ""  # the panels are as they were; the status line says it is a look back
        said = ending(snap)
        if said:
            return said
        if self.stepping and self.wanted:
            return self._waiting_note(snap)
        return ""

    def _waiting_note(self, snap: StageSnapshot) -> str:
        watched, soonest = snap.loop.watching, snap.loop.next_timer
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
        return note + f"; the next timer is due in {soonest:.1f} s."

    def status_words(self) -> tuple[str, str, Words]:
        after: Words = []
        if self.looking is not None:
            after.append((f" of {self.steps} · n forward, p runs on", "bold"))
            return "LOOKING BACK", "bold black on yellow", after
        ended = over_word(self._latest)
        if ended is not None:
            return ended[0], ended[1], after
        if self.stepping:
            return "STEP MODE", "bold white on magenta", after
        after.append((f" · {self.speed} a frame", "bold"))
        return "RUNNING", "bold black on green", after
