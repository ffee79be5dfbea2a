"""Making crawled text safe to show: it is untrusted and shown literally, never interpreted."""

from __future__ import annotations

import re
import unicodedata

# What a URL's password is written as wherever a URL is kept or shown (alice:***@host).
PASSWORD_MASK = "***"

# scheme://user:password@ in free text: the password runs to the authority's last "@".
_PASSWORD = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://[^/?#:@\s]*:)[^/?#\s]+@")

# Bidi controls can reorder what a reader sees; they are escaped like control characters.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _needs_escape(ch: str) -> bool:
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def printable(text: str, limit: int | None = None) -> str:
    """`text` with control, format and bidi characters written as \\xNN / \\uNNNN escapes,
    cut to `limit` characters (ending in an ellipsis) when a limit is given."""
    if text.isprintable() and _BIDI.isdisjoint(text):
        out = text
    else:
        out = "".join(
            (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
            if _needs_escape(ch)
            else ch
            for ch in text
        )
    if limit is not None and len(out) > limit:
        out = out[: max(limit - 1, 0)] + "…"
    return out


def mask_userinfo(text: str) -> str:
    """`text` with the password of every URL in it written as PASSWORD_MASK; for text that
    may quote a URL the user typed (an error message), whether or not it parses."""
    if "@" not in text:
        return text
    return _PASSWORD.sub(lambda m: f"{m.group(1)}{PASSWORD_MASK}@", text)
