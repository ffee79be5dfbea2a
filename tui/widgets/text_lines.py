"""Lines of styled text drawn as Strips of plain Segments, for the line-based panels.

A line is a tuple of (text, style) pieces: cheap to build every frame and to compare, so a
panel can tell which of its lines changed and redraw only those. Turning one into a Strip
skips Textual's Content pipeline, which costs far more per line than the few Segments here.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.widget import Widget

from ..textual_private import forget_lines, render_again
from .held import Repaints

Piece = tuple[str, str]  # text, and a Rich style spec ("" for none)
Line = tuple[Piece, ...]


@lru_cache(maxsize=128)
def style_of(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


def base_style(widget: Widget) -> Style:
    """The colours `widget` draws its text on. Widget.rich_style walks every ancestor's
    styles on each call (30 us, which a pulse frame cannot spare); visual_style is the same
    style, kept until the widget's styles change (a theme change restyles every widget)."""
    return widget.visual_style.rich_style


def strip_of(line: Line, base: Style) -> Strip:
    """`line` on `base` (the widget's own colours), as long as its text."""
    return Strip([Segment(text, base + style_of(spec)) for text, spec in line if text])


def plain_of(line: Line) -> str:
    return "".join(text for text, _ in line)


def wrapped(
    line: Line, width: int, base: Style, right: bool = False, phrases: bool = False
) -> list[Strip]:
    """`line` in rows of `width` cells, broken where Textual breaks a Static's text (between
    words, folding a word longer than a row), so the screen reads as it did with one; set
    to the right of each row when `right`. With `phrases`, broken after commas instead
    where each phrase fits a row: "10 in flight," then "277 queued", never "277" then
    "queued"."""
    if width <= 0:
        return []
    strip = strip_of(line, base)
    if strip.cell_length <= width:
        return [_fill(strip, width, base, right)]
    plain = plain_of(line)
    if phrases:
        rows = _at_commas(strip, plain, width, base, right)
        if rows:
            return rows
    rows = []
    start = 0
    for row in Content(plain).wrap(width):
        end = start + len(row.plain)
        cut = strip.crop(cell_len(plain[:start]), cell_len(plain[:end]))
        rows.append(_fill(cut, width, base, right))
        start = end
        # The spaces a row was broken at are dropped, as Textual drops them.
        while start < len(plain) and plain[start].isspace():
            start += 1
    return rows


def _at_commas(strip: Strip, plain: str, width: int, base: Style, right: bool) -> list[Strip]:
    """The rows of a line broken after its commas only; [] if a phrase is too long."""
    rows: list[Strip] = []
    start = end = 0
    for phrase in re.findall(r"[^,]*(?:,|$)", plain):
        if not phrase:
            continue
        if cell_len(plain[start : end + len(phrase)].rstrip()) > width and end > start:
            rows.append(
                _fill(
                    strip.crop(cell_len(plain[:start]), cell_len(plain[:end])), width, base, right
                )
            )
            start = end
            while start < len(plain) and plain[start].isspace():
                start += 1
        end += len(phrase)
        if cell_len(plain[start:end].rstrip()) > width:
            return []
    rows.append(
        _fill(strip.crop(cell_len(plain[:start]), cell_len(plain[:end])), width, base, right)
    )
    return rows


def _fill(strip: Strip, width: int, base: Style, right: bool) -> Strip:
    if right and strip.cell_length < width:
        return Strip([Segment(" " * (width - strip.cell_length), base), *strip], width)
    return strip.adjust_cell_length(width, base)


def plain_inside(widget: Widget) -> bool:
    """Whether `widget`'s lines inside its border are its content alone: no outline or
    padding, no tint, hatch or opacity, all of which Textual's StylesCache would draw. (It
    also styles a hovered link; the lines here have none.)"""
    styles = widget.styles
    return (
        not any(styles.padding)
        and not any(edge for edge, _ in styles.outline)
        and not styles.tint.a
        and styles.opacity == 1.0
        and styles.text_opacity == 1.0
        and (not styles.has_rule("hatch") or styles.hatch == "none")
    )


def bare(widget: Widget) -> bool:
    """Whether `widget`'s lines are its content alone: plain inside, and no border."""
    return plain_inside(widget) and not any(edge for edge, _ in widget.styles.border)


def filtered(widget: Widget, strips: list[Strip]) -> list[Strip]:
    """`strips` put through the app's filters (the theme's colours for ANSI ones,
    NO_COLOR), as Textual puts each line of `widget`."""
    # Both looked up once: each walks the widget's ancestors.
    _, background = widget.background_colors
    # A widget may have made its styles as a filter would already (the timeline's colours,
    # made truecolor once a style): that filter would change nothing, at a cost a segment.
    applied = getattr(widget, "filters_applied", ())
    for line_filter in widget.get_line_filters():
        if line_filter not in applied:
            strips = [strip.apply_filter(line_filter, background) for strip in strips]
    return strips


def content_lines(widget: Repaints, first: int, count: int, width: int) -> list[Strip]:
    """Lines `first` to `first + count` of `widget`'s content, `width` cells of each from
    its left, as the compositor would draw them now. Plain inside its border, each is the
    widget's own line put through the app's filters (Textual's StylesCache builds every
    line again around it, border included: two thirds of the cost of a workers table's
    row), and the copies the StylesCache keeps are marked stale; else it draws them."""
    x, y = widget.content_offset
    crop = Region(x, y + first, width, count)
    if not plain_inside(widget):
        return render_again(widget, crop)
    forget_lines(widget, crop)
    widget.update_look()
    # What the StylesCache fills a short line with: the widget's background alone.
    base_background, background = widget.background_colors
    inner = VisualStyle(background=base_background + background).rich_style
    lines = [widget.render_line(row) for row in range(first, first + count)]
    return filtered(widget, [line.adjust_cell_length(width, inner) for line in lines])


class OneLine(Repaints):
    """A widget of one line of pieces (`_line`), drawn from a Strip kept until the line,
    the colours or the width change. Too long for the width, the line is broken between
    words as Textual breaks a Static's text, and the first row shows."""

    RIGHT = False  # set to the right of its row

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._line: Line = ()
        # The strip drawn, and what it was drawn from: the line, the colours, the width.
        self._drawn: tuple[tuple[Line, Style, int], Strip] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's StylesCache builds each line again around its content (a border,
        padding, tint, opacity; 0.3 ms for the status line's one line, on every pulse). A
        line with none of them is the kept strip itself, put through the app's filters
        (the theme's colours for ANSI ones, NO_COLOR) and cut to the crop, as there."""
        if self.size.height != 1 or not bare(self):
            return super().render_lines(crop)
        [strip] = filtered(self, [self.render_line(0)])
        if crop.column_span != (0, strip.cell_length):
            strip = strip.crop(*crop.column_span)
        return [strip] * crop.height

    def render_line(self, y: int) -> Strip:
        base = base_style(self)
        width = self.size.width
        if y != 0:
            return Strip.blank(width, base)
        key = (self._line, base, width)
        if self._drawn is None or self._drawn[0] != key:
            rows = wrapped(self._line, width, base, right=self.RIGHT)
            self._drawn = (key, rows[0] if rows else Strip.blank(width, base))
        return self._drawn[1]
