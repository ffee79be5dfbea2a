"""What a response's Content-Type makes of its body: an HTML page (its links are taken),
text (it has an encoding), or bytes. Kept apart from links.py, which needs BeautifulSoup,
so that a process that only reads records (a `--procs` parent, a report) does not load it.
"""

from __future__ import annotations

import codecs

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Types of text outside text/*: a body of any other type is bytes, with no encoding.
TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript",
                        "application/ecmascript", "application/x-javascript"})  # fmt: skip


def is_html(content_type: str | None) -> bool:
    return content_type in HTML_TYPES


def is_text(content_type: str | None) -> bool:
    """Whether a body of `content_type` (lower case, no parameters) is text."""
    if not content_type:
        return False
    return (
        content_type.startswith("text/")
        or content_type in TEXT_TYPES
        or content_type.endswith(("+xml", "+json"))
    )


def known_charset(charset: str | None) -> str | None:
    """`charset` if Python has a codec by that name, else None (servers lie)."""
    if not charset:
        return None
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None
