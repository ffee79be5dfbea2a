"""The redirect chains panel (issue 12, speed): a line-based widget that draws each chain
with its end, folds and unfolds, shows crawled text literally, and on a `show` repaints
only the lines that changed, asking for a layout pass only when the line count moves.

Work is counted (refreshed regions, layout requests), never timed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.text import printable
from crawlscope.engine.redirects import MAX_CHAINS, Chain, ChainEnd
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.redirect_tree import EXPAND_UP_TO, RedirectTree
from helpers import Handler, html

Serve = Callable[[dict[str, Handler]], Awaitable[str]]
ROOT = "http://h"


def chain(name: str, hops: int = 1, end: ChainEnd = ChainEnd.PENDING, meets: bool = False) -> Chain:
    urls = (f"{ROOT}/{name}", *(f"{ROOT}/{name}/{i}" for i in range(1, hops + 1)))
    status = 200 if end is ChainEnd.FETCHED else None
    return Chain(urls, end, status, meets)


def many(count: int, hops: int = 3) -> list[Chain]:
    return [chain(f"c{i}", hops) for i in range(count)]


class Panel(App[None]):
    def compose(self) -> ComposeResult:
        yield RedirectTree(id="redirects")


class Refreshes:
    """Every refresh the widget asks for: the regions, and whether it wanted a layout."""

    def __init__(self, tree: RedirectTree) -> None:
        self.regions: list[Region] = []
        self.whole = 0  # refresh() of the whole widget
        self.layouts = 0
        original = tree.refresh

        def counted(*regions: Region, **options: Any) -> Any:
            self.regions.extend(regions)
            self.whole += not regions
            self.layouts += bool(options.get("layout"))
            return original(*regions, **options)

        tree.refresh = counted

    def clear(self) -> None:
        self.regions.clear()
        self.whole = self.layouts = 0

    @property
    def rows(self) -> set[int]:
        return {region.y for region in self.regions}


def drawn(tree: RedirectTree) -> list[str]:
    """The lines on screen, as drawn (inside the border, if it has one)."""
    return [tree.render_line(y).text.rstrip() for y in range(tree.size.height)]


async def panel(pilot: Pilot[None]) -> RedirectTree:
    tree = pilot.app.query_one(RedirectTree)
    await pilot.pause()
    return tree


async def test_each_chain_is_drawn_with_its_hops_and_how_it_ended() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.origin = ROOT
        loop = Chain((f"{ROOT}/l/a", f"{ROOT}/l/b", f"{ROOT}/l/a"), ChainEnd.LOOP, None, False)
        cut = Chain(
            (f"{ROOT}/long", f"{ROOT}/long/1", f"{ROOT}/long/30"),
            ChainEnd.LIMIT,
            None,
            False,
            hidden=28,
        )
        tree.show([chain("a", end=ChainEnd.FETCHED, meets=True), loop, cut])
        await pilot.pause()
        assert drawn(tree)[:10] == [
            "▼ /a  = 200  ⋈ meets  (1 hop)",
            "└ → /a/1  = 200",
            "▼ /l/a  ↻ loop  (2 hops)",
            "├ → /l/b",
            "└ → /l/a  ↻ loop",
            "▼ /long  ✂ max_redirect  (30 hops)",
            "├ → /long/1",
            "├ … 28 more hops",
            "└ → /long/30  ✂ max_redirect",
            "",
        ]


async def test_a_crawl_with_redirects_draws_its_chains_as_they_ended(serve: Serve) -> None:
    def to(target: str) -> Handler:
        async def handler(_request: web.Request) -> web.Response:
            raise web.HTTPFound(target)

        return handler

    page = '<a href="/a">a</a> <a href="/loop/1">l</a>'
    routes = {"/": html(page), "/a": to("/b"), "/b": html("b")}
    routes |= {"/loop/1": to("/loop/2"), "/loop/2": to("/loop/1")}
    root = await serve(routes)
    app = CrawlScopeApp(LiveCrawl((root,), make_config=config(2)))
    async with app.run_test(size=(160, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        await frames(pilot, 3)
        tree = app.query_one(RedirectTree)

        def ends_drawn() -> bool:
            lines = drawn(tree)
            return "└ → /b  = 200" in lines and "└ → /loop/1  ↻ loop" in lines

        await until(pilot, ends_drawn, "both chains drawn with their ends")
        lines = drawn(tree)
        assert "▼ /a  = 200  (1 hop)" in lines and "▼ /loop/1  ↻ loop  (2 hops)" in lines


async def test_a_chain_whose_end_changes_is_redrawn_and_only_its_lines() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.origin = ROOT
        first, second = chain("a"), chain("b", hops=2)
        tree.show([first, second])
        await pilot.pause()
        refreshes = Refreshes(tree)
        tree.show([first, chain("b", hops=2, end=ChainEnd.FETCHED)])
        # b's head and its last hop changed; a's lines and b's first hop did not.
        assert refreshes.rows == {2, 4} and refreshes.whole == refreshes.layouts == 0
        await pilot.pause()
        assert drawn(tree)[2:5] == ["▼ /b  = 200  (2 hops)", "├ → /b/1", "└ → /b/2  = 200"]


async def test_a_show_of_the_same_chains_refreshes_nothing() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        chains = many(40)
        tree.show(chains, total=MAX_CHAINS + 7)
        await pilot.pause()
        refreshes = Refreshes(tree)
        for _ in range(3):
            # Equal chains (new objects), as the engine's preview hands them over.
            tree.show([Chain(c.urls, c.end, c.status, c.meets) for c in chains], MAX_CHAINS + 7)
        assert refreshes.regions == [] and refreshes.whole == refreshes.layouts == 0
        # A count below the screen moves: still nothing on screen to repaint.
        tree.show(chains, total=MAX_CHAINS + 8)
        assert refreshes.regions == [] and refreshes.whole == refreshes.layouts == 0


async def test_a_show_asks_for_a_layout_only_when_the_scrollbar_comes_or_goes() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.origin = ROOT
        chains = many(10)  # 40 lines in 20 rows: a scrollbar
        tree.show(chains)
        await pilot.pause()
        assert tree.show_vertical_scrollbar
        refreshes = Refreshes(tree)
        chains[4] = chain("c4", hops=3, end=ChainEnd.FAILED)
        tree.show(chains)
        assert refreshes.layouts == 0 and refreshes.rows == {16, 19}
        refreshes.clear()
        # Two lines more, below the screen: the scroll range grows, nothing is repainted.
        tree.show([*chains, chain("new")])
        assert refreshes.layouts == refreshes.whole == 0 and refreshes.rows == set()
        assert tree.virtual_size.height == tree.line_count == 42
        assert tree.max_scroll_y == 42 - tree.scrollable_content_region.height
        await pilot.press("end")
        await pilot.pause()
        assert drawn(tree)[-2:] == ["▼ /new  … pending  (1 hop)", "└ → /new/1  … pending"]
        # Down to 8 lines: the scrollbar goes, and that takes a layout.
        tree.show(chains[:2])
        assert refreshes.layouts >= 1
        await pilot.pause()
        assert not tree.show_vertical_scrollbar and tree.scroll_y == 0
        assert drawn(tree)[7:9] == ["└ → /c1/3  … pending", ""]


async def test_a_chain_absorbed_into_a_longer_one_disappears() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.origin = ROOT
        foo = Chain((f"{ROOT}/foo", f"{ROOT}/baz"), ChainEnd.PENDING, None, False)
        tree.show([chain("a"), foo])
        await pilot.pause()
        # x -> foo recorded after foo -> baz: foo's chain is now part of x's.
        longer = Chain((f"{ROOT}/x", f"{ROOT}/foo", f"{ROOT}/baz"), ChainEnd.PENDING, None, False)
        tree.show([chain("a"), longer])
        await pilot.pause()
        assert tree.chain_lines(f"{ROOT}/foo") == [] and list(tree._chains) == [
            f"{ROOT}/a",
            f"{ROOT}/x",
        ]
        assert drawn(tree)[2:6] == [
            "▼ /x  … pending  (2 hops)",
            "├ → /foo",
            "└ → /baz  … pending",
            "",
        ]


async def test_chains_past_the_first_ones_arrive_folded_and_enter_unfolds_them() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.origin = ROOT
        tree.show(many(EXPAND_UP_TO + 2, hops=2))
        await pilot.pause()
        lines = tree.plain_lines()
        assert lines.count("▼ /c0  … pending  (2 hops)") == 1
        assert lines[-2:] == [
            f"▶ /c{EXPAND_UP_TO}  … pending  (2 hops)",
            f"▶ /c{EXPAND_UP_TO + 1}  … pending  (2 hops)",
        ]
        tree.focus()
        await pilot.press("end")
        assert tree.cursor_line == len(lines) - 1
        await pilot.press("enter")
        assert tree.plain_lines()[-3:] == [
            f"▼ /c{EXPAND_UP_TO + 1}  … pending  (2 hops)",
            f"├ → /c{EXPAND_UP_TO + 1}/1",
            f"└ → /c{EXPAND_UP_TO + 1}/2  … pending",
        ]
        await pilot.press("down", "down")  # onto its last hop: space folds its chain
        await pilot.press("space")
        assert tree.plain_lines()[-1] == f"▶ /c{EXPAND_UP_TO + 1}  … pending  (2 hops)"
        assert tree.cursor_line == tree.line_count - 1
        # Folding stays as asked while the chain changes.
        await pilot.press("home", "enter")
        tree.show(many(EXPAND_UP_TO + 2, hops=3))
        assert tree.plain_lines()[:2] == [
            "▶ /c0  … pending  (3 hops)",
            "▼ /c1  … pending  (3 hops)",
        ]


async def test_the_cursor_is_drawn_only_while_focused_and_moves_with_the_keys() -> None:
    async with Panel().run_test(size=(70, 10)) as pilot:
        tree = await panel(pilot)
        tree.show(many(EXPAND_UP_TO, hops=3))
        tree.focus()
        await pilot.pause()
        cursor = tree.get_component_rich_style("redirect-tree--cursor", partial=True).bgcolor

        def highlighted() -> list[int]:
            strips = tree.render_lines(Region(0, 0, *tree.size))
            return [
                y for y, strip in enumerate(strips) if next(iter(strip)).style.bgcolor == cursor
            ]

        assert cursor is not None and highlighted() == [0]
        tree.blur()
        await pilot.pause()
        assert highlighted() == []
        tree.focus()
        await pilot.pause()
        await pilot.press("down", "down")
        assert highlighted() == [2]
        await pilot.press("pagedown")
        assert tree.cursor_line == 2 + tree.size.height and tree.scroll_y > 0
        assert highlighted() == [tree.cursor_line - int(tree.scroll_y)]
        await pilot.press("end")
        assert tree.cursor_line == tree.line_count - 1
        await pilot.press("home")
        assert tree.cursor_line == 0 and tree.scroll_y == 0


async def test_more_chains_than_shown_are_counted_in_a_last_line() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.show(many(MAX_CHAINS + 5, hops=1))
        lines = tree.plain_lines()
        assert len(tree._chains) == MAX_CHAINS
        assert lines[-1] == "… 5 more chains (all are in the report)"
        tree.show(many(3), total=1234)
        assert tree.plain_lines()[-1] == "… 1,231 more chains (all are in the report)"
        tree.show(many(3), total=3)
        assert not any("more chains" in line for line in tree.plain_lines())


async def test_hostile_urls_are_drawn_literally_on_every_kind_of_line() -> None:
    hostile = "http://h/[bold]x[/bold][@click=app.quit]\x1b[31mred\u202eevil"
    async with Panel().run_test(size=(200, 20)) as pilot:
        tree = await panel(pilot)
        loop = Chain((hostile, f"{hostile}/2", f"{hostile}/3"), ChainEnd.LOOP, None, True, hidden=4)
        tree.show([loop])
        await pilot.pause()
        text = "\n".join(drawn(tree))
        escaped = printable(hostile)
        assert f"▼ {escaped}  ↻ loop  ⋈ meets  (6 hops)" in text
        assert f"├ → {escaped}/2" in text and f"└ → {escaped}/3  ↻ loop" in text
        assert "\x1b" not in text and "\u202e" not in text and pilot.app.is_running


async def test_a_click_on_a_chains_marker_folds_it_and_elsewhere_moves_the_cursor() -> None:
    async with Panel().run_test(size=(70, 20)) as pilot:
        tree = await panel(pilot)
        tree.origin = ROOT
        tree.show(many(3, hops=2))
        await pilot.pause()
        await pilot.click(RedirectTree, offset=(10, 3))  # c1's head, past its marker
        assert tree.cursor_line == 3 and tree.plain_lines()[3].startswith("▼ /c1")
        await pilot.click(RedirectTree, offset=(0, 3))  # its marker
        assert tree.plain_lines()[3:5] == [
            "▶ /c1  … pending  (2 hops)",
            "▼ /c2  … pending  (2 hops)",
        ]
        await pilot.click(RedirectTree, offset=(0, 3))
        assert tree.plain_lines()[3:5] == ["▼ /c1  … pending  (2 hops)", "├ → /c1/1"]
