"""Who ran when (issue 40): `l` on a lecture stage shows a lane per fetch slot (stage 1) or
per task (stage 2) over the steps taken, each lane in its state at every step and bright
at the steps its code ran, read against the stage's own snapshots of those steps."""

from __future__ import annotations

import pytest
from test_tui_lecture import DEMO, mounted, step, two_workers
from tui_support import screen_text, until

from crawlscope.engine.lecture.snapshot import Engine, StageSnapshot
from crawlscope.engine.lecture.step_lanes import RAN, lane_name
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.widgets.timeline_screen import HEAD, LABEL, TimelineScreen, lane_style

STEPS = 14


def ran_at(before: StageSnapshot | None, snap: StageSnapshot) -> dict[str, tuple[str, str]]:
    """Each lane's label and what it should show at the step of `snap`."""
    if snap.engine is Engine.GENERATORS:
        return {lane_name(t.name): (RAN if t.resumed else t.state, t.url or "") for t in snap.tasks}
    old = {s.id: (s.state, s.url) for s in before.loop.slots} if before else {}
    return {
        f"s{s.id}": (RAN if s.id in old and old[s.id] != (s.state, s.url) else s.state, s.url or "")
        for s in snap.loop.slots
    }


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_l_draws_a_lane_per_task_bright_where_it_ran(engine: str) -> None:
    app = LectureApp([engine], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(140, 40)) as pilot:
        stage = await mounted(pilot)
        await step(pilot, STEPS)
        history = list(stage.history)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the lanes")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        view = screen.view
        await until(pilot, lambda: view.timeline.lanes, "the lanes drawn")
        assert f"{view.span:g} steps across" in screen_text(app)
        feed = view.timeline.feed
        ran = 0
        for before, snap in zip([None, *history], history, strict=False):
            for name, (state, _url) in ran_at(before, snap).items():
                lane = view.timeline.lanes[feed.names.index(name)]  # type: ignore[attr-defined]
                held = lane.state_at(snap.steps + 0.5)
                assert held is not None and held[0] == state, (snap.steps, name, held)
                ran += state == RAN
        assert ran >= STEPS // 2, ran  # most steps moved a task or a slot on
        # On screen: each lane under its name, a step where it ran drawn bright.
        await pilot.press("plus")  # 5 steps across: a step is many columns wide
        await until(pilot, lambda: view.span == 5.0, "the zoom")
        rows = view._rows
        labels = [rows[y].text[: LABEL - 1].strip() for y in range(HEAD, len(rows))]
        names = {name[: LABEL - 1] for name in feed.names}  # type: ignore[attr-defined]
        assert set(labels) == names, labels
        # A step that ran: its cells in the bright colour, or a URL written on it.
        # (In the colours the terminal is sent: the app's theme makes ANSI ones truecolor.)
        bright = view.styled(lane_style(RAN)).color
        others = {view.styled(lane_style(state)).color for state in ("waiting", "headers", "done")}
        assert bright is not None and bright not in others
        cells = [seg.style for row in rows[HEAD:] for seg in row if seg.style is not None]
        assert any(bright in (style.color, style.bgcolor) for style in cells), "no step ran"
