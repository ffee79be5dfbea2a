"""The index page of hostile cases that need servers of their own (robots.txt and
kept-alive connections belong to an origin, so each such case is one)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

from aiohttp import web


def origins_page(
    title: str, intro: str, cases: Iterable[tuple[str, str]], origins: Mapping[str, str]
) -> web.Response:
    """A page linking to each (name, about) case's server, for those started so far."""
    items = "".join(
        f'<li><a href="{html.escape(origins[name])}">{html.escape(name)}</a>:'
        f" {html.escape(about)}</li>\n"
        for name, about in cases
        if name in origins
    )
    text = (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n<body>\n"
        f"<h1>{title}</h1>\n<p>{intro} A crawl in strict scope leaves them alone (another"
        f" port).</p>\n<ul>\n{items}</ul>\n</body></html>\n"
    )
    return web.Response(text=text, content_type="text/html", charset="utf-8")
