"""Where a terminal's output may be cut between two messages to the class.

A viewer who joins gets the screen as the model has it, then every message after. A
message that ended inside an escape sequence or a UTF-8 character would leave the model
holding the first half, and hand the joiner the second half alone: his terminal would
print "38;5;214m" where the others see a colour, and a paused screen never draws over it.
So a message ends only where the stream is between two whole sequences.
"""

from __future__ import annotations

ESC = 0x1B
# A tail held back longer than this is sent as it is: no terminal sequence is this long,
# and a program that never ends one must not make the class wait for ever.
MOST_HELD = 64 * 1024


def whole_part(data: bytes | bytearray) -> int:
    """How many bytes of `data`, from its start, end between two whole sequences (and
    whole characters); the rest waits for what the terminal writes next."""
    end = len(data)
    last = data.rfind(b"\x1b", max(0, end - MOST_HELD))
    if last >= 0 and not _ended(data, last):
        end = last
    return _before_partial_character(data, end)


def _ended(data: bytes | bytearray, at: int) -> bool:
    """Whether the sequence starting with the ESC at `at` ends within `data`."""
    if at + 1 >= len(data):
        return False
    kind = data[at + 1]
    if kind == ord("["):  # CSI: parameters, intermediates, one final byte
        i = at + 2
        while i < len(data) and 0x30 <= data[i] <= 0x3F:
            i += 1
        while i < len(data) and 0x20 <= data[i] <= 0x2F:
            i += 1
        return i < len(data) and 0x40 <= data[i] <= 0x7E
    if kind in b"]P^_X":  # OSC and the other strings: BEL or ST (an ESC, so a later one)
        return data.find(b"\x07", at + 2) >= 0
    if 0x20 <= kind <= 0x2F:  # ESC ( B and the like: one more byte
        return at + 2 < len(data)
    return True  # ESC and one byte


def _before_partial_character(data: bytes | bytearray, end: int) -> int:
    """`end`, or the start of a UTF-8 character that `end` would cut."""
    start = end
    while start > 0 and end - start < 3 and data[start - 1] & 0xC0 == 0x80:
        start -= 1  # continuation bytes
    if start == 0:
        return end
    lead = data[start - 1]
    if lead >> 5 == 0b110:
        size = 2
    elif lead >> 4 == 0b1110:
        size = 3
    elif lead >> 3 == 0b11110:
        size = 4
    else:
        return end  # not a lead byte: nothing to wait for
    if end - (start - 1) < size:
        return start - 1
    return end


def whole_keys(data: bytes) -> bytes:
    """The lecturer's keys in one message, as whole keys: characters, and escape
    sequences that end. A sequence cut short (by the message's end, or by another ESC)
    and an ESC left last are left out: sent on, they would take the next key into them
    (the app reads ESC then n as alt+n). A message that is ESC alone is the Escape key."""
    if data == b"\x1b":
        return data
    out = bytearray()
    i = 0
    while i < len(data):
        if data[i] != ESC:
            out.append(data[i])
            i += 1
            continue
        after = _key_end(data, i)
        if after is None:  # cut short: its bytes up to the next key are not one
            i += 1
            while i < len(data) and data[i] != ESC and 0x20 <= data[i] <= 0x7E:
                i += 1
            continue
        out += data[i:after]
        i = after
    return bytes(out).rstrip(b"\x1b")


def _key_end(data: bytes, at: int) -> int | None:
    """One past the end of the escape sequence at `at`, or None if it does not end whole
    within `data`: a CSI ends in a final byte, SS3 in a key, a string in BEL or ST."""
    if at + 1 >= len(data):
        return None
    kind = data[at + 1]
    if kind == ord("["):
        i = at + 2
        while i < len(data) and 0x20 <= data[i] <= 0x3F:  # parameters, intermediates
            i += 1
        return i + 1 if i < len(data) and 0x40 <= data[i] <= 0x7E else None
    if kind == ord("O"):
        return at + 3 if at + 2 < len(data) and 0x20 <= data[at + 2] <= 0x7E else None
    if kind in b"]P^_X":
        bel, st = data.find(b"\x07", at + 2), data.find(b"\x1b\\", at + 2)
        ends = [end for end in (bel + 1, st + 2) if end > at + 2]
        return min(ends) if ends else None
    return at + 2  # ESC and one byte: alt and a key
