"""The shared screen as the server keeps it (pyte), fed the same bytes the viewers get, so
one who joins late is sent the screen as it stands, not left blank until the next change.

The screen is redrawn from the model, not replayed from a log of output: what a joiner
is sent is bounded by the screen's size (cols x rows cells), however long the class ran.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyte
from pyte import graphics

# pyte names a colour it was given by number; the number back, by pyte's own tables (so
# its spelling, "bfightmagenta" included, maps back to the code it came from).
_FG = {name: code for table in (graphics.FG_ANSI, graphics.FG_AIXTERM)
       for code, name in table.items()}  # fmt: skip
_BG = {name: code for table in (graphics.BG_ANSI, graphics.BG_AIXTERM)
       for code, name in table.items()}  # fmt: skip

# Private modes the app set that a joiner's terminal must have too: the mouse (so the
# lecturer's clicks reach the app), bracketed paste and focus reports. pyte keeps a
# private mode shifted left by 5, apart from the public ones.
_CARRIED_MODES = (1000, 1002, 1003, 1004, 1006, 1015, 2004)


class ScreenModel:
    """A `cols` x `rows` terminal that only remembers what it shows."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)

    def feed(self, data: bytes) -> None:
        self.stream.feed(data)

    def reset(self) -> None:
        self.screen.reset()
        self.stream = pyte.ByteStream(self.screen)

    def text(self) -> list[str]:
        """Each row's characters, for a reader of the screen (tests, the benchmark)."""
        return list(self.screen.display)

    def serialised(self) -> bytes:
        """Bytes that draw the current screen on a fresh terminal of the same size: the
        alternate screen, cleared; each row with its colours and attributes; the modes the
        app set; the cursor where it is, shown or hidden."""
        return "".join(self._drawing()).encode("utf-8", "replace")

    def _drawing(self) -> Iterator[str]:
        screen = self.screen
        yield "\x1b[?1049h\x1b[0m\x1b[2J"
        for y in range(self.rows):
            yield f"\x1b[{y + 1};1H"
            line = screen.buffer[y]
            style = ""
            x = 0
            while x < self.cols:
                char = line[x]
                wanted = _sgr(char)
                if wanted != style:
                    yield wanted
                    style = wanted
                # A wide character fills two cells; pyte leaves the second one empty.
                yield char.data or " "
                x += 2 if x + 1 < self.cols and line[x + 1].data == "" else 1
            yield "\x1b[0m"
        for mode in _CARRIED_MODES:
            if mode << 5 in screen.mode:
                yield f"\x1b[?{mode}h"
        cursor = screen.cursor
        yield f"\x1b[{cursor.y + 1};{cursor.x + 1}H"
        yield "\x1b[?25l" if cursor.hidden else "\x1b[?25h"


def _colour(name: str, names: dict[str, int], extended: int) -> str:
    code = names.get(name)
    if code is not None:
        return str(code)
    try:  # a 256-colour or true colour, which pyte keeps as rrggbb
        red, green, blue = (int(name[i : i + 2], 16) for i in (0, 2, 4))
    except ValueError:
        return str(extended + 1)  # one pyte never makes: the default
    return f"{extended};2;{red};{green};{blue}"


# Each attribute pyte keeps, and its SGR code.
_ATTRIBUTES = (("bold", "1"), ("italics", "3"), ("underscore", "4"), ("blink", "5"),
               ("reverse", "7"), ("strikethrough", "9"))  # fmt: skip


def _sgr(char: pyte.screens.Char) -> str:
    codes = ["0", *(code for name, code in _ATTRIBUTES if getattr(char, name))]
    if char.fg != "default":
        codes.append(_colour(char.fg, _FG, 38))
    if char.bg != "default":
        codes.append(_colour(char.bg, _BG, 48))
    return f"\x1b[{';'.join(codes)}m"
