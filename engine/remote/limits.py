"""What viewers of a monitor may cost the crawl's process, and which web pages may be one:
apart from the monitor, so a command line can state the defaults without loading aiohttp."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..observe.text import printable

# What a viewer may have waiting for it, in this process and its kernel, before it is
# dropped: bytes (a first frame, the biggest, is some hundreds of KiB at 1,000 workers),
# and seconds without once catching up.
MAX_BEHIND_BYTES = 2 * 1024 * 1024
MAX_BEHIND_SECONDS = 5.0
TOTAL_BEHIND_BYTES = 32 * 1024 * 1024  # for all the viewers together
MAX_VIEWERS = 256  # connections at once, WebSocket or not yet
HANDSHAKE_SECONDS = 5.0  # for a connection to become a WebSocket, or be closed


# The longest origin: a scheme, a host name of 253 characters and a port.
MAX_ORIGIN = len("https://") + 253 + len(":65535") + 1
# A host as a browser names it in an Origin: an ASCII name (an international one in its
# xn-- form), an IPv4 address, or an IPv6 one (in brackets in the origin).
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")


def origin_of(text: str) -> str:
    """An Origin as the monitor compares it: `scheme://host[:port]`, lower case, without
    a default port, or "null"; ValueError says why `text` is not one (in one line, its
    text escaped and cut)."""
    text = text.strip()
    if text == "null":
        return text
    shown = printable(text, 80)
    if len(text) > MAX_ORIGIN:
        raise ValueError(f"not an origin: '{shown}' is longer than {MAX_ORIGIN} characters")
    if not text.isascii() or not text.isprintable() or " " in text:
        raise ValueError(
            f"not an origin: '{shown}' (spaces, controls and non-ASCII have no place in "
            "one; an international name goes in its xn-- form)"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(f"not an origin: '{shown}' (use scheme://host[:port])") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an origin: '{shown}' (use http://host[:port])")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"an origin is scheme://host[:port] and nothing else, not '{shown}'")
    host = parts.hostname.lower()
    if not _is_host(host):
        raise ValueError(f"not an origin: '{shown}' (its host is no host name nor address)")
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == {"http": 80, "https": 443}[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


def _is_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        labels = host.removesuffix(".").split(".")
        return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in labels)
    return True


@dataclass(frozen=True)
class ViewerLimits:
    """What viewers may cost the crawl's process, and which web pages may be one."""

    max_viewers: int = MAX_VIEWERS
    handshake_seconds: float = HANDSHAKE_SECONDS
    max_behind_bytes: int = MAX_BEHIND_BYTES
    max_behind_seconds: float = MAX_BEHIND_SECONDS
    total_behind_bytes: int = TOTAL_BEHIND_BYTES
    # Origins (origin_of's form) whose pages may connect, besides the monitor's own.
    allow_origins: frozenset[str] = frozenset()


DEFAULT_LIMITS = ViewerLimits()
