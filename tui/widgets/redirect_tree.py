"""Every redirect chain as a folding list: source, each hop, and how it ended.

What it builds is capped, so that a redraw costs the same however many chains a crawl
has and however long they are: the first MAX_CHAINS chains, each cut to MAX_HOPS hops
(its first ones and its last), with counts for the rest; the report lists them all. The
engine keeps each chain's cut until a hop changes it (RedirectLog.preview), and only a
chain that changed is built again.

A line-based widget (like the workers table): every line is a few (text, style) pieces,
turned into a Strip only while it is on screen, and a `show` repaints only the lines on
screen whose content moved. It asks for a layout pass only when the line count changes
(the scrollbar's range); a Textual Tree asked for one on every node it added or removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, Protocol

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.strip import Strip

from crawlscope.engine.observe.text import printable
from crawlscope.engine.redirects import MAX_CHAINS, MAX_HOPS, Chain, ChainEnd

from ..format import short_url
from ..textual_private import set_scroll_range
from .cursor_lines import CursorLines
from .text_lines import base_style

# Beyond this many chains, new ones arrive folded so the list stays scannable.
EXPAND_UP_TO = 30

_END: dict[ChainEnd, tuple[str, str]] = {
    ChainEnd.FETCHED: ("", "green"),
    ChainEnd.FAILED: ("✗ failed", "red"),
    ChainEnd.PENDING: ("… pending", "yellow"),
    ChainEnd.LOOP: ("↻ loop", "bold magenta"),
    ChainEnd.LIMIT: ("✂ max_redirect", "bold dark_orange"),
    ChainEnd.FILTERED: ("⊘ filtered", "dim"),
    ChainEnd.UNFETCHED: ("unfetched", "dim"),
    ChainEnd.MEETS: ("⋈ meets", "bold cyan"),
}

# What goes before a line's text: a chain's fold marker, or a hop's guide.
OPEN, FOLDED = "▼ ", "▶ "
HOP, LAST_HOP = "├ ", "└ "

# A run of text and the style it is drawn in (a Rich style definition, "" for none).
Piece = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Line:
    """One line as plain values: equal lines draw the same, so they are compared, not
    drawn, to know what a `show` changed."""

    source: str | None  # the chain it belongs to; None for the "more chains" line
    prefix: str  # OPEN, FOLDED, HOP, LAST_HOP or ""
    pieces: tuple[Piece, ...]

    @property
    def plain(self) -> str:
        return self.prefix + "".join(text for text, _ in self.pieces)


@dataclass(frozen=True, slots=True)
class _Block:
    """A chain's lines, built once per change of the chain; folding picks among them."""

    chain: Chain
    opened: Line
    folded: Line
    hops: tuple[Line, ...]


class ChainSource(Protocol):
    """A live crawl or a replay: what the list asks of either."""

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]: ...


def _end(chain: Chain) -> Piece:
    word, style = _END[chain.end]
    if chain.end is ChainEnd.FETCHED:
        word = f"= {chain.status}"
        if chain.status is not None and chain.status >= 400:
            style = "red"
    return word, style


def end_text(chain: Chain) -> Text:
    word, style = _end(chain)
    return Text(word, style=style)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' if count != 1 else ''}"


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


class RedirectTree(CursorLines):
    """Diffed by chain source: a chain whose hops or end changed is built again in place.

    The cursor (drawn while focused) stays on its line of its chain while that chain is
    shown; enter or space folds or unfolds the chain under it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "fold", "Fold", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"redirect-tree--guides", "redirect-tree--cursor"}
    # As Textual's Tree looked, so the screen a user knows stays the same.
    DEFAULT_CSS = """
    RedirectTree {
        background: $surface;
        color: $foreground;
        & > .redirect-tree--guides {
            color: $surface-lighten-2;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .redirect-tree--guides {
                color: $surface-lighten-3;
            }
            & > .redirect-tree--cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
                text-style: $block-cursor-text-style;
            }
        }
        &:light > .redirect-tree--guides {
            color: $surface-darken-1;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._origin = ""
        # The chains of the last `show`, in its order, by source.
        self._chains: dict[str, Chain] = {}
        self._blocks: dict[str, _Block] = {}
        self._folded: set[str] = set()
        self._total = 0
        self._more: Line | None = None
        # What is drawn, top to bottom, and where each chain's first line is.
        self._lines: list[Line] = []
        self._starts: dict[str, int] = {}
        self._cursor = 0
        # Strips of lines that have been on screen, by line; all go when the look moves.
        self._strips: dict[Line, Strip] = {}
        self._look: tuple[object, ...] = ()
        self._base = Style()
        self._guide_style = Style()
        self._cursor_style = Style()

    # ---- what the rest of the app asks ---------------------------------------------------

    @property
    def origin(self) -> str:
        return self._origin

    @origin.setter
    def origin(self, origin: str) -> None:
        # Every line shows its URLs relative to the origin: a new one rebuilds them all.
        if origin == self._origin:
            return
        self._origin = origin
        chains = list(self._chains.values())
        self._chains.clear()
        self._blocks.clear()
        self.show(chains, self._total)

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def cursor_line(self) -> int:
        return self._cursor

    def plain_lines(self) -> list[str]:
        """Every line as drawn (fold markers and guides too), scrolled or not."""
        return [line.plain for line in self._lines]

    def chain_lines(self, source: str) -> list[str]:
        """The lines of the chain from `source`, its hops whether it is folded or not."""
        block = self._blocks.get(source)
        if block is None:
            return []
        head = block.folded if source in self._folded else block.opened
        return [line.plain for line in (head, *block.hops)]

    def show_from(self, source: ChainSource) -> None:
        chains, total = source.chain_preview(MAX_CHAINS, MAX_HOPS)
        self.show(chains, total)

    def show(self, chains: Sequence[Chain], total: int | None = None) -> None:
        """Draw `chains` (the first of `total`, which defaults to all of them)."""
        shown = chains[:MAX_CHAINS]
        self._total = len(chains) if total is None else total
        blocks: dict[str, _Block] = {}
        for chain in shown:
            source = chain.urls[0]
            block = self._blocks.get(source)
            if block is None:
                # A chain arriving past the first EXPAND_UP_TO stays folded till asked.
                if len(blocks) >= EXPAND_UP_TO:
                    self._folded.add(source)
                else:
                    self._folded.discard(source)
            if block is None or block.chain != chain:
                block = self._block(chain, block)
            blocks[source] = block
        # A source gone has become a hop of a longer chain (x -> foo after foo -> baz).
        self._folded &= blocks.keys()
        self._blocks = blocks
        self._chains = {source: block.chain for source, block in blocks.items()}
        rest = self._total - len(shown)
        self._more = self._more_line(rest) if rest > 0 else None
        self._relayout()

    # ---- lines ---------------------------------------------------------------------------

    def _block(self, chain: Chain, old: _Block | None) -> _Block:
        source = chain.urls[0]
        # Most telling first, as a narrow panel cuts the end off: source, how it ended.
        label: list[Piece] = [(printable(short_url(source, self._origin)), ""), ("  ", "")]
        label.append(_end(chain))
        if chain.meets and chain.end is not ChainEnd.MEETS:
            label.append(("  ⋈ meets", "bold cyan"))
        label.append((f"  ({_plural(chain.hops, 'hop')})", "dim"))
        pieces = tuple(label)
        if old is not None and (old.chain.urls, old.chain.hidden) == (chain.urls, chain.hidden):
            # Only its end moved (its target answered): the hops before the last stay.
            hops = (*old.hops[:-1], self._hop(source, chain.urls[-1], chain))
        else:
            hops = self._hops(chain)
        return _Block(chain, Line(source, OPEN, pieces), Line(source, FOLDED, pieces), hops)

    def _hops(self, chain: Chain) -> tuple[Line, ...]:
        source, last = chain.urls[0], len(chain.urls) - 1
        lines = [self._hop(source, url) for url in chain.urls[1:last]]
        if chain.hidden:
            more = (f"… {_plural(chain.hidden, 'more hop')}", "dim italic")
            lines.append(Line(source, HOP, (more,)))
        lines.append(self._hop(source, chain.urls[last], chain))
        return tuple(lines)

    def _hop(self, source: str, url: str, ending: Chain | None = None) -> Line:
        """A hop's line; the last one (`ending` its chain) says how the chain ended."""
        # A hop is dim all along, its end too: the chain's own line stands out.
        hop: tuple[Piece, ...] = (("→ " + printable(short_url(url, self._origin)), "dim"),)
        if ending is None:
            return Line(source, HOP, hop)
        word, style = _end(ending)
        return Line(source, LAST_HOP, (*hop, ("  ", "dim"), (word, f"dim {style}")))

    @staticmethod
    def _more_line(rest: int) -> Line:
        return Line(None, "", ((f"… {rest:,} more chains (all are in the report)", "dim italic"),))

    def _relayout(self) -> None:
        """Lay the blocks out as lines and repaint the lines on screen that changed."""
        old_lines, old_cursor = self._lines, self._cursor
        at = old_lines[old_cursor] if old_cursor < len(old_lines) else None
        offset = old_cursor - self._starts.get(at.source, old_cursor) if at and at.source else 0
        lines: list[Line] = []
        starts: dict[str, int] = {}
        for source, block in self._blocks.items():
            starts[source] = len(lines)
            if source in self._folded:
                lines.append(block.folded)
            else:
                lines.append(block.opened)
                lines.extend(block.hops)
        if self._more is not None:
            lines.append(self._more)
        self._lines, self._starts = lines, starts
        # The cursor stays on its line of its chain; with the chain gone, on its row.
        if at is not None and at.source in starts:
            block = self._blocks[at.source]
            span = 1 if at.source in self._folded else 1 + len(block.hops)
            self._cursor = starts[at.source] + min(offset, span - 1)
        else:
            self._cursor = min(old_cursor, max(len(lines) - 1, 0))
        if len(lines) != len(old_lines):
            self._set_line_count(len(lines))
        self._refresh_changed(old_lines, old_cursor)

    def _set_line_count(self, count: int) -> None:
        """Tell the scrollbar, asking for a layout pass only when one can change a thing."""
        size = Size(0, count)
        if self.styles.height is not None and self.styles.height.is_auto:
            self.virtual_size = size  # the widget's height follows its lines: lay it out
            return
        # The layout gives this widget its height, whatever its line count: only the
        # scroll range moves. A scrollbar that has to appear or go asks for a layout
        # itself (show_vertical_scrollbar); a layout of the whole screen for every chain
        # that grew a hop held the crawl's loop for 13-115 ms.
        self.set_reactive(RedirectTree.virtual_size, size)
        set_scroll_range(self, size)

    def _refresh_changed(self, old: list[Line], old_cursor: int) -> None:
        top, width, new = self._top, self.size.width, self._lines
        cursors = {old_cursor, self._cursor} if old_cursor != self._cursor else set()
        for row in range(top, top + self.size.height):
            if row >= len(old) and row >= len(new):
                break
            same = row < len(old) and row < len(new) and old[row] == new[row]
            if not same or row in cursors:
                self.repaint(Region(0, row - top, width, 1))

    # ---- drawing -------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._update_look()
        return super().render_lines(crop)

    def _update_look(self) -> None:
        base = base_style(self)
        guides = base + self.get_component_rich_style("redirect-tree--guides", partial=True)
        cursor = base + self.get_component_rich_style("redirect-tree--cursor", partial=True)
        look = (base, guides, cursor, self.size.width)
        if look != self._look:
            self._look = look
            self._base, self._guide_style, self._cursor_style = base, guides, cursor
            self._strips.clear()

    def render_line(self, y: int) -> Strip:
        row = self._top + y
        if not 0 <= row < len(self._lines):
            return Strip.blank(self.size.width, self._base)
        line = self._lines[row]
        if row == self._cursor and self.has_focus:
            return self._strip(line, self._cursor_style, self._cursor_style)
        strip = self._strips.get(line)
        if strip is None:
            if len(self._strips) > 4 * max(self.size.height, 1):
                self._strips.clear()  # lines scrolled past or replaced
            strip = self._strips[line] = self._strip(line, self._base, self._guide_style)
        return strip

    def _strip(self, line: Line, base: Style, guides: Style) -> Strip:
        segments: list[Segment] = []
        if line.prefix:
            marker = line.prefix in (OPEN, FOLDED)
            segments.append(Segment(line.prefix, base if marker else guides))
        segments.extend(Segment(text, base + _style(spec)) for text, spec in line.pieces)
        # Too long a line is cut at the edge, as the tree cut it.
        return Strip(segments).adjust_cell_length(self.size.width, base)

    def on_focus(self, _event: events.Focus) -> None:
        self._refresh_row(self._cursor)

    def on_blur(self, _event: events.Blur) -> None:
        self._refresh_row(self._cursor)

    def _refresh_row(self, row: int) -> None:
        self.refresh(Region(0, row - self._top, self.size.width, 1))

    # ---- the cursor and folding ----------------------------------------------------------

    def _move(self, row: int) -> None:
        if not self._lines:
            return
        row = max(0, min(row, len(self._lines) - 1))
        if row == self._cursor:
            return
        old, self._cursor = self._cursor, row
        self._scroll_to_cursor()
        self._refresh_row(old)
        self._refresh_row(row)

    def _line_count(self) -> int:
        return len(self._lines)

    def action_fold(self) -> None:
        """Fold or unfold the chain under the cursor; folded, the cursor is on its head."""
        if not self._cursor < len(self._lines):
            return
        source = self._lines[self._cursor].source
        if source is None:
            return
        if source in self._folded:
            self._folded.discard(source)
        else:
            self._folded.add(source)
            self._cursor = self._starts[source]  # its hops go: the cursor goes up to it
        self._relayout()
        self._scroll_to_cursor()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = self._top + offset.y
        if not 0 <= row < len(self._lines):
            return
        self._move(row)
        # A click on a chain's marker folds or unfolds it, as on the tree's.
        on_marker = offset.x < len(OPEN) and self._lines[row].prefix in (OPEN, FOLDED)
        if row == self._cursor and on_marker:
            self.action_fold()
