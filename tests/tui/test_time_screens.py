"""Time on the live screen (issue 40): rewind while the crawl runs, the timeline and a
fetch's waterfall from it, and F saving the last minute. The real TUI under Textual's
Pilot, crawling the real demo site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.pilot import Pilot
from tui_support import config, crawler_of, until

from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.engine.trace.load import load_recording
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.screens.live import LiveScreen
from crawlscope.tui.screens.rewind import RewindScreen
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.recent_fetches import RecentFetches
from crawlscope.tui.widgets.timeline_screen import TimelineScreen
from crawlscope.tui.widgets.waterfall_screen import WaterfallScreen, waterfall_text

pytestmark = pytest.mark.slow

# Slow enough that the crawl is still running while the test looks back.
DEMO = DemoConfig(pages=400, latency=0.05)


def status(app: CrawlScopeApp) -> str:
    from crawlscope.tui.widgets.status_line import StatusLine

    line = app.panels.query_one(StatusLine)
    return "".join(strip.text for strip in line.render_lines(line.region.reset_offset))


def panels(snap: object) -> tuple[object, ...]:
    """What the panels draw from a snapshot, the parts a moment decides."""
    from crawlscope.engine.observe.snapshot import Snapshot

    assert isinstance(snap, Snapshot)
    rows = tuple((w.id, w.state, w.url, w.pages, w.paused) for w in snap.workers)
    return (rows, snap.accounting, snap.unfinished, snap.hosts, snap.warnings, snap.phase)


async def open_timeline(pilot: Pilot[int], app: CrawlScopeApp, pages: int) -> TimelineScreen:
    """After `pages` pages of the live crawl, `t`: the timeline screen, once on top."""
    crawler = await crawler_of(pilot)
    await until(pilot, lambda: len(crawler.ledger.done) >= pages, f"{pages} pages")
    await pilot.press("t")
    await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the timeline")
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    return screen


async def test_rewind_shows_the_recorded_moment_while_the_crawl_goes_on(tmp_path: Path) -> None:
    record = tmp_path / "crawl.jsonl"
    live = LiveCrawl(make_config=config(6), demo=DEMO, record=str(record))
    app = CrawlScopeApp(live)
    async with app.run_test(size=(140, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 40, "40 pages")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the rewind")
        rewind = app.screen
        assert isinstance(rewind, RewindScreen)
        # This screen rewinds: its recorder sums up each chunk as it closes.
        assert live.flight is not None and live.flight.ring.summarize
        # Back a few steps with the replay's keys, then read what the panels are given.
        await pilot.press("left", "left", "left")
        moment = rewind.replay.index
        shown = panels(rewind.replay.snapshot())
        done_then = len(crawler.ledger.done)
        # The crawl goes on while the user looks back; the screen stays where it was put.
        await until(pilot, lambda: len(crawler.ledger.done) >= done_then + 20, "20 more pages")
        assert rewind.replay.index == moment
        assert panels(rewind.replay.snapshot()) == shown
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, LiveScreen), "back to now")
        crawler.stop()
        await until(pilot, lambda: crawler.t1 is not None, "the crawl's end")
    # The same moment of the --record file's replay draws the same panels.
    replay = load_recording(record)
    assert isinstance(replay, ReplayedCrawl)
    rewound_events = rewind.replay.events
    replay.goto(moment)
    assert replay.events[:moment] == rewound_events[:moment]
    assert panels(replay.snapshot()) == shown


async def test_the_timeline_draws_a_lane_per_worker_and_opens_a_waterfall() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        crawler = await crawler_of(pilot)
        view = (await open_timeline(pilot, app, 30)).view
        await until(pilot, lambda: len(view._rows) >= 5 + 4, "four lanes")
        labels = [strip.text.split()[0] for strip in view._rows[5:9]]
        assert labels == ["w0", "w1", "w2", "w3"]
        # Zoom out: the span across the screen grows, and the title says so.
        await pilot.press("minus")
        assert view.span == 30.0 and "30 s across" in view._rows[0].text
        # Scroll back: no longer following now; f follows again.
        await pilot.press("left_square_bracket")
        assert not view.follow and "f: follow now" in view._rows[0].text
        await pilot.press("f")
        assert view.follow
        # Back to 10 s, then the cursor onto a moment a worker held a URL, and enter.
        await pilot.press("plus")
        crawler.pause_all()
        # The cursor leaves "now" before a lane is read: while the view follows, the moment
        # under the cursor moves on between the read and the enter, and the last fetches
        # may not be in the lanes yet (each press catches the lanes up to its moment).
        for _ in range(view.columns):
            await pilot.press("left")
            held = view.timeline.lanes[0].state_at(view.cursor_t)
            done = held is not None and held[1] is not None and held[1] in crawler.ledger.done
            if done:
                break
        assert done, "no finished fetch under the cursor"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WaterfallScreen), "the waterfall")
        waterfall = app.screen
        assert isinstance(waterfall, WaterfallScreen)
        fall = waterfall.fall
        assert held is not None and fall.url == held[1] and fall.worker == 0
        text = waterfall_text(fall).plain
        assert fall.url in text and "awaiting the status line and headers" in text
        assert abs(sum(s for _, s in fall.parts) - fall.total) <= 1e-6


async def test_the_panels_under_the_timeline_draw_nothing_and_all_when_back() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        crawler = await crawler_of(pilot)
        panels = app.panels
        screen = await open_timeline(pilot, app, 10)
        drawn, done = panels.frames, len(crawler.ledger.done)
        ticks = screen.view.ticks + 3
        await until(pilot, lambda: screen.view.ticks >= ticks, "three ticks of the timeline")
        await until(pilot, lambda: len(crawler.ledger.done) > done, "the crawl goes on")
        assert panels.frames == drawn  # not one frame of the screen no one sees
        crawler.pause_all()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is panels, "back to the panels")
        await pilot.pause()
        # Drawn whole at once: the status line says what the crawl has done now.
        pages = re.search(r" (\d+) pages? ", panels._status.render().plain)
        assert pages is not None and int(pages.group(1)) >= len(crawler.ledger.done) - 4


async def test_a_lane_kept_from_the_frame_before_is_the_lane_built_afresh() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(8), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        view = (await open_timeline(pilot, app, 10)).view
        # Frames as they come, the cursor moved, a lane picked, the view scrolled back,
        # zoomed: each time, every lane drawn is what it would be if nothing were kept.
        for keys in ((), (), ("left",), ("down",), ("left_square_bracket",), ("minus",),
                     ("f",), ("right", "right"), ()):  # fmt: skip
            frames = view.frames
            await pilot.press(*keys)
            await until(pilot, lambda: view.frames > frames, "a frame")  # noqa: B023
            # Built again at once, as the next frame would from the lanes as they are now
            # (the recorder's events may have come in since the frame): with what was kept,
            # then with nothing kept. The two must be the same.
            view._build()
            drawn = list(view._rows[5:])
            view._lane_strips.clear()
            view._build()
            assert view._rows[5:] == drawn


async def test_a_click_on_a_recent_fetch_opens_its_waterfall() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 20, "20 pages")
        crawler.pause_all()
        recent = app.panels.query_one(RecentFetches)

        def still() -> bool:
            # Every worker held back (no fetch left to finish), and the newest drawn.
            paused = all(w.state is WorkerState.PAUSED for w in crawler.workers.values())
            newest = crawler.recent_fetches()[-1]
            return paused and recent.record_at(0) is newest and recent.record_at(2) is not None

        await until(pilot, still, "the crawl paused, its last fetches drawn")
        picked = recent.record_at(2)
        assert picked is not None
        # The third line of the panel: below its border, the third fetch drawn.
        await pilot.click(RecentFetches, offset=(3, 3))
        await until(pilot, lambda: isinstance(app.screen, WaterfallScreen), "the waterfall")
        waterfall = app.screen
        assert isinstance(waterfall, WaterfallScreen)
        fall = waterfall.fall
        assert fall.url == picked.url and fall.worker == picked.worker
        assert fall.status == picked.status
        assert abs(sum(s for _, s in fall.parts) - fall.total) <= 1e-6
        assert fall.url in waterfall_text(fall).plain


async def test_f_saves_the_last_minute_and_the_status_line_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 10, "10 pages")
        await pilot.press("F")
        folder = tmp_path / "crawlscope" / "flights"
        await until(pilot, lambda: folder.is_dir() and any(folder.iterdir()), "a flight file")
        (path,) = folder.iterdir()
        screen = app.panels
        assert isinstance(screen, LiveScreen)
        assert screen.flight_note == path.name
        await until(pilot, lambda: f"flight saved: {path.name}" in status(app), "the name")
    replay = load_recording(path)
    assert isinstance(replay, ReplayedCrawl)
    replay.goto(len(replay.events))
    # The flight's last moment has the pages done by then.
    assert replay.accounting().done >= 10


async def test_the_timelines_colours_are_what_the_apps_filters_would_make_them() -> None:
    # The timeline makes its styles truecolor once (a frame skips that filter, which would
    # cost a call a segment): put through the app's filters, its lines come out unchanged.
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        view = (await open_timeline(pilot, app, 10)).view
        await until(pilot, lambda: len(view._rows) >= 5 + 4, "four lanes")
        filters = app.get_line_filters()
        assert view.filters_applied and set(view.filters_applied) <= set(filters)
        rows = list(view._rows)
        _, background = view.background_colors
        coloured = 0
        for strip in rows:
            again = strip
            for line_filter in filters:
                again = again.apply_filter(line_filter, background)
            assert list(again) == list(strip)
            coloured += sum(1 for s in strip if s.style is not None and s.style.color is not None)
        assert coloured > 4  # lanes in colour, not a test of blank lines
