"""A crawl as it runs: the panels, and the keys that steer it where steering is offered."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import BindingType

from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl
from crawlscope.engine.observe.snapshot import OVER, Snapshot
from crawlscope.engine.observe.timeline import Feed
from crawlscope.engine.trace.flight import FlightRing
from crawlscope.engine.trace.flight_saver import FlightSaver, Saved

from ..frame_budget import FRAMES_PER_SECOND
from ..keys import COMMON, PAST, STEERING, Key, bindings
from .panels import PanelsScreen

SLOWMO_STEPS = (0.0, 0.25, 0.5, 1.0)
STEERING_ACTIONS = frozenset(key.action.split("(")[0] for key in STEERING)


class LiveScreen(PanelsScreen):
    KEYS: ClassVar[tuple[Key, ...]] = (*STEERING, *PAST, *COMMON)
    BINDINGS: ClassVar[list[BindingType]] = bindings(STEERING, PAST, COMMON)

    def __init__(self, *, fps: float = FRAMES_PER_SECOND, reproducible: bool = False) -> None:
        super().__init__(fps=fps, reproducible=reproducible)
        self.controls: CrawlControls | None = None  # None: watch only
        self.stopping = False  # quitting: the keys that steer are done
        self.flight: FlightSaver | None = None  # the flight recorder (None: none here)

    def observe_live(
        self, source: ObservedCrawl, controls: CrawlControls | None, site: str
    ) -> None:
        self.controls = controls
        self.observe(source, site)
        self.refresh_bindings()

    def host_controls(self) -> CrawlControls | None:
        return None if self.stopping else self.controls

    def bindings_state(self, snap: Snapshot) -> tuple[object, ...]:
        return (*super().bindings_state(snap), self.stopping)

    # ---- which keys apply ------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save_flight":
            return True if self.flight is not None else None
        if action in ("rewind", "timeline"):
            return True if self.past() is not None else None
        if action not in STEERING_ACTIONS:
            return True
        snap = self.snap
        if self.controls is None or snap is None or self.stopping:
            # Not yet, no longer, or never possible: greyed out, the pause keys once.
            return None if action not in ("resume_all", "resume_worker") else False
        if snap.phase in OVER:
            return False  # hidden: nothing left to steer
        if action == "pause_all":
            return not snap.paused_all
        if action == "resume_all":
            return snap.paused_all
        if action in ("pause_worker", "resume_worker", "cancel_worker"):
            w = self.selected()
            paused = w is not None and w.paused
            if action == "pause_worker" and paused:
                return False
            if action == "resume_worker" and not paused:
                return False
            if w is None or not w.alive:
                return None
            if action == "cancel_worker" and w.retiring:
                return None
        if action == "remove_worker" and not snap.removable():
            return None
        return True

    # ---- actions: each asks the controls, then redraws at once -------------------------

    def action_pause_all(self) -> None:
        if self.controls is not None:
            self.controls.pause_all()
            self.redraw()

    def action_resume_all(self) -> None:
        if self.controls is not None:
            self.controls.resume_all()
            self.redraw()

    def action_pause_worker(self) -> None:
        w = self.selected()
        if w is not None and self.controls is not None:
            self.controls.pause(w.id)
            self.redraw()

    def action_resume_worker(self) -> None:
        w = self.selected()
        if w is not None and self.controls is not None:
            self.controls.resume(w.id)
            self.redraw()

    def action_cancel_worker(self) -> None:
        w = self.selected()
        if w is not None and self.controls is not None:
            self.controls.cancel_worker(w.id)
            self.redraw()

    def action_add_worker(self) -> None:
        if self.controls is not None:
            self.controls.add_worker()
            self.redraw()

    def action_remove_worker(self) -> None:
        if self.controls is not None:
            self.controls.remove_worker()
            self.redraw()

    def action_slowmo(self, direction: int = 1) -> None:
        if self.controls is None or self.snap is None:
            return
        current = self.snap.slowmo
        steps = SLOWMO_STEPS
        index = min(range(len(steps)), key=lambda i: abs(steps[i] - current))
        slowmo = steps[(index + direction) % len(steps)]
        self.controls.set_slowmo(slowmo)
        self.notify(
            f"{slowmo:g} s at each state change" if slowmo else "full speed",
            title="slow motion",
            timeout=2,
        )
        self.redraw()

    # ---- the flight recorder ---------------------------------------------------------

    def watch_flight(self, flight: FlightSaver | None) -> None:
        self.flight = flight
        if flight is not None:
            flight.listeners.append(self._flight_saved)
        self.refresh_bindings()

    def _flight_saved(self, saved: Saved | None) -> None:
        flight = self.flight
        if saved is None:
            text = flight.problem if flight is not None else "cannot save the flight"
            self.notify(text, title="flight recorder", severity="error", timeout=10)
            return
        self.flight_note = saved.path.name
        self.notify(f"{saved.path}\nplay it: crawlscope replay FILE", title="flight saved",
                    timeout=10, markup=False)  # fmt: skip
        self.redraw()

    def past(self) -> FlightRing | None:
        """The recent past to draw: this crawl's flight recorder, or what a viewer of a
        crawl elsewhere kept of the events its frames carried (RemoteCrawl.past)."""
        if self.flight is not None:
            return self.flight.ring
        kept = getattr(self.source, "past", None)
        return kept if isinstance(kept, FlightRing) else None

    def events_feed(self) -> Feed | None:
        return self.past()

    def action_save_flight(self) -> None:
        if self.flight is not None:
            self.flight.save("asked")

    def action_rewind(self) -> None:
        ring = self.past()
        if ring is None or self.source is None:
            return
        from .rewind import RewindScreen

        self.app.push_screen(
            RewindScreen(ring, fps=self.budget.fps, reproducible=self.reproducible)
        )
