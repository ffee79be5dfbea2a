"""Links out of an HTML page, with BeautifulSoup and the lxml parser."""

from __future__ import annotations

import codecs
import warnings

from bs4 import BeautifulSoup, SoupStrainer
from bs4.builder import XMLParsedAsHTMLWarning
from bs4.dammit import EncodingDetector
from yarl import URL

from .urls import normalize

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Only these tags matter, so lxml still tokenises the page but bs4 builds a tiny tree.
_WANTED = SoupStrainer(["a", "area", "base"])

warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)


def is_html(content_type: str | None) -> bool:
    return content_type in HTML_TYPES


def known_charset(charset: str | None) -> str | None:
    """`charset` if Python has a codec by that name, else None (servers lie)."""
    if not charset:
        return None
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None


def choose_encoding(body: bytes, charset: str | None) -> str:
    """The encoding to try first: the header's, else a BOM's, else the document's, else utf-8."""
    header = known_charset(charset)
    if header:
        return header
    _, bom = EncodingDetector.strip_byte_order_mark(body)
    if bom:
        return bom
    declared = EncodingDetector.find_declared_encoding(
        body, is_html=True, search_entire_document=False
    )
    return known_charset(declared) or "utf-8"


def parse_links(
    body: bytes, page_url: str, charset: str | None, max_links: int = 0
) -> tuple[str, list[str]]:
    """The encoding used and the page's http(s) links, normalised, unique, in page order
    (the first `max_links` of them, when that is not 0).

    Links resolve against <base href> when
    the page has one.
    """
    # bs4 falls back to other encodings by itself if the first choice cannot decode the body.
    first = choose_encoding(body, charset)
    soup = BeautifulSoup(body, "lxml", parse_only=_WANTED, from_encoding=first)
    encoding = soup.original_encoding or first
    base = URL(page_url)
    base_tag = soup.find("base", href=True)
    if base_tag is not None:
        base = URL(normalize(str(base_tag["href"]), base) or page_url)
    links: dict[str, None] = {}
    for tag in soup.find_all(["a", "area"], href=True):
        url = normalize(str(tag["href"]), base)
        if url is not None:
            links[url] = None
            if len(links) == max_links:
                # The rest of a page with 20,000 links is not worth the time it costs.
                break
    return encoding, list(links)
