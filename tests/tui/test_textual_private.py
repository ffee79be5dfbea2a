"""Every private name of Textual that crawlscope relies on, checked against the installed
Textual: a release that renames or reshapes one fails here, by name. And no module of the
TUI but tui/textual_private.py uses any."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

import crawlscope.tui
from crawlscope.tui import textual_private
from crawlscope.tui.textual_private import (
    TimedScreen,
    changes_pending,
    composite,
    grey_footer_key,
    layout_pending,
    mark_dirty,
    render_again,
    repaint_pending,
    scroll_pending,
    set_scroll_range,
    visible_widgets,
    write_lines,
    write_runs,
)

TUI = Path(crawlscope.tui.__file__).parent
PRIVATE_MODULE = TUI / "textual_private.py"

# Textual's private modules imported, and what is taken from each.
MODULES = {
    "textual._compositor": ("LayoutUpdate", "Compositor", "CompositorUpdate"),
    "textual.widgets._footer": ("FooterKey",),
}
# Private methods: on which class, and the parameters each is called or overridden with.
METHODS = {
    "_display": ("textual.app.App", ["screen", "renderable"]),
    "_handle_exception": ("textual.app.App", ["error"]),
    "_compositor_refresh": ("textual.screen.Screen", []),
    "_refresh_layout": ("textual.screen.Screen", ["size", "scroll"]),
    "_set_dirty": ("textual.widget.Widget", ["regions"]),
    "_scroll_update": ("textual.widget.Widget", ["virtual_size"]),
}
# Private attributes: each object's, and the type of its value on a new one.
ATTRIBUTES = {
    "_batch_count": ("app", int),
    "_compositor": ("screen", "textual._compositor.Compositor"),
    "_dirty_widgets": ("screen", set),
    "_layout_required": ("widget", bool),
    "_scroll_required": ("widget", bool),
    "_repaint_required": ("widget", bool),
    "_recompose_required": ("widget", bool),
    "_disabled": ("footer key", bool),
    "_styles_cache": ("widget", "textual._styles_cache.StylesCache"),
}


def named(path: str) -> object:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def new(kind: str) -> object:
    """A fresh object of `kind`, never mounted: what it holds from its constructor on."""
    if kind == "app":
        return App()
    if kind == "screen":
        return Screen()
    if kind == "footer key":
        return textual_private.FooterKey("q", "q", "Quit", "app.quit")
    return Widget()


@pytest.mark.parametrize(("module", "names"), MODULES.items())
def test_each_private_module_has_the_classes_taken_from_it(
    module: str, names: tuple[str, ...]
) -> None:
    imported = importlib.import_module(module)
    for name in names:
        assert inspect.isclass(getattr(imported, name, None)), f"{module}.{name}"


def test_the_private_classes_have_their_expected_shape() -> None:
    from textual._compositor import Compositor, CompositorUpdate, LayoutUpdate

    assert issubclass(LayoutUpdate, CompositorUpdate)
    assert list(inspect.signature(LayoutUpdate).parameters) == ["strips", "region"]
    update = LayoutUpdate([[Strip.blank(3)]], Region(1, 2, 3, 1))
    assert update.region == Region(1, 2, 3, 1) and len(update.strips) == 1
    assert list(inspect.signature(CompositorUpdate.render_segments).parameters) == [
        "self",
        "console",
    ]
    from textual._styles_cache import StylesCache

    assert list(inspect.signature(StylesCache.set_dirty).parameters) == ["self", "regions"]
    assert isinstance(inspect.getattr_static(Compositor, "visible_widgets"), property)
    assert list(inspect.signature(Compositor.update_widgets).parameters) == ["self", "widgets"]
    assert issubclass(textual_private.FooterKey, Widget)
    assert "disabled" in inspect.signature(textual_private.FooterKey).parameters


@pytest.mark.parametrize(("name", "where"), METHODS.items())
def test_each_private_method_is_there_with_its_parameters(
    name: str, where: tuple[str, list[str]]
) -> None:
    owner, parameters = where
    method = getattr(named(owner), name, None)
    assert callable(method), f"{owner}.{name}"
    assert list(inspect.signature(method).parameters)[1:] == parameters, f"{owner}.{name}"


@pytest.mark.parametrize(("name", "where"), ATTRIBUTES.items())
def test_each_private_attribute_is_set_by_the_constructor(
    name: str, where: tuple[str, type | str]
) -> None:
    kind, expected = where
    value = getattr(new(kind), name, None)
    kind_of = named(expected) if isinstance(expected, str) else expected
    assert isinstance(value, kind_of), f"{kind}.{name}: {value!r}"  # type: ignore[arg-type]


def private_names_used(tree: ast.AST) -> set[str]:
    """The private names a module reaches for: attributes, overridden methods and private
    modules; its own (assigned on self) left out."""
    own = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            used.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            used |= {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name.startswith("_")
            }
        elif isinstance(node, ast.ImportFrom) and node.module and "._" in node.module:
            used.add(node.module)
    return {name for name in used if not name.startswith("__")} - own


def test_the_tables_above_name_every_private_name_the_module_uses() -> None:
    used = private_names_used(ast.parse(PRIVATE_MODULE.read_text()))
    assert used == set(MODULES) | set(METHODS) | set(ATTRIBUTES)


def textual_private_names() -> set[str]:
    """Textual's private names on the classes the TUI builds on, and on new objects."""
    names = set(MODULES) | set(METHODS) | set(ATTRIBUTES)
    for kind in ("app", "screen", "widget", "footer key"):
        thing = new(kind)
        for cls in type(thing).__mro__:
            if cls.__module__.startswith("textual"):
                names |= set(vars(cls))
        names |= set(vars(thing))
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_other_module_of_the_tui_uses_textuals_private_api() -> None:
    private = textual_private_names()
    found = []
    for path in sorted(TUI.rglob("*.py")):
        if path == PRIVATE_MODULE:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                modules += [alias.name for alias in getattr(node, "names", [])]
                if any(m.startswith("textual") and "._" in m for m in modules):
                    found.append(f"{path.relative_to(TUI)}:{node.lineno} imports {modules[0]}")
        textual = any(
            isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual")
            for node in ast.walk(tree)
        )
        if textual:
            for name in sorted(private_names_used(tree) & private):
                found.append(f"{path.relative_to(TUI)}: {name}")
    assert found == []


class Said(Widget):
    """One line, of whatever `text` says when it is drawn."""

    DEFAULT_CSS = "Said { height: 1; }"
    text = "old"

    def render_line(self, y: int) -> Strip:
        return Strip([Segment(self.text)]) if y == 0 else Strip.blank(self.size.width)


class Shown(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("one", id="one")
        yield Static("two", id="two")
        yield Said()


class Timed(TimedScreen):
    def __init__(self) -> None:
        super().__init__()
        self.drawing: list[float] = []

    def compose(self) -> ComposeResult:
        yield Static("timed", id="timed")

    def drawn(self, seconds: float) -> None:
        self.drawing.append(seconds)


async def test_each_use_works_on_a_running_app() -> None:
    written: list[object] = []
    app = Shown()
    async with app.run_test(size=(20, 5)) as pilot:
        await pilot.pause()
        screen = app.screen
        one = app.query_one("#one", Static)
        visible = visible_widgets(screen)
        assert visible is visible_widgets(screen)  # the same map until it is rebuilt
        region, clip = visible[one]
        assert isinstance(region, Region) and isinstance(clip, Region)
        assert region == one.region
        assert not changes_pending(screen)
        assert not layout_pending(one) and not scroll_pending(one)
        assert not repaint_pending(one)
        one.refresh()
        assert repaint_pending(one)
        one.refresh(layout=True)
        assert layout_pending(one)
        await pilot.pause()
        assert not repaint_pending(one)

        display = app._display
        app._display = lambda s, update: written.append(update) or display(s, update)  # type: ignore[method-assign]
        line = Strip.blank(3)
        write_lines(screen, [[line]], Region(0, 0, 3, 1))
        assert len(written) == 1
        mark_dirty(one, None)
        composite(screen, {one})
        assert len(written) == 2 and not changes_pending(screen)
        # Two runs, one update: each run moves the cursor to its own place.
        write_runs(screen, [([[line]], Region(0, 0, 3, 1)), ([[line]], Region(2, 3, 3, 1))])
        assert len(written) == 3
        assert written[2].render_segments(app.console).count("\x1b[") == 2  # type: ignore[attr-defined]
        # Changed without a refresh, the line is drawn again all the same.
        said = app.query_one(Said)
        assert said.render_lines(Region(0, 0, 3, 1))[0].text == "old"
        said.text = "new"
        assert said.render_lines(Region(0, 0, 3, 1))[0].text == "old"  # the kept copy
        assert render_again(said, Region(0, 0, 3, 1))[0].text == "new"
        set_scroll_range(one, Size(20, 50))  # no layout asked for
        assert not layout_pending(one) and not layout_pending(screen)

        timed = Timed()
        await app.push_screen(timed)
        await pilot.pause()
        layouts = timed.layouts
        timed.refresh(layout=True)
        await pilot.pause()
        assert timed.layouts > layouts and timed.drawing


def test_greying_a_footer_key_sets_what_a_click_reads() -> None:
    key = textual_private.FooterKey("q", "q", "Quit", "app.quit")
    grey_footer_key(key, enabled=False)
    assert key._disabled is True
    grey_footer_key(key, enabled=True)
    assert key._disabled is False
