"""A 1 MB HTML page like a long article or forum thread, and a tiny server for it.

python -m bench.bigpage [--size BYTES]    (prints its URL, serves until killed)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random

from aiohttp import web

WORDS = ("the", "crawler", "reads", "every", "page", "once", "and", "follows", "each", "link")


def make_page(size: int = 1_000_000, seed: int = 1) -> bytes:
    """About `size` bytes of HTML: navigation, then posts of text with inline markup, a few
    links each (to other posts, to other sites, to fragments), images and scripts, as a
    real long page has. Deterministic from `seed`."""
    rng = random.Random(seed)
    nav = "".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(50))
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>A long page</title>',
        '<link rel="stylesheet" href="/style.css"><script src="/app.js"></script></head>',
        f'<body><header><nav><ul class="menu">{nav}</ul></nav></header><main>',
    ]
    size_so_far = sum(map(len, parts))
    n = 0
    while size_so_far < size:
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        k = rng.randrange(100_000)
        post = (
            f'<article class="post" id="p{n}"><h2><a href="#p{n}">Post {n}</a></h2>'
            f'<p class="text">{words} <a href="/post/{k}">see post {k}</a>, '
            f'<em>{words[:40]}</em> and <a href="https://example.org/ref/{k}?from={n}">a '
            f'source</a>.</p><p>{words[::-1]}</p><img src="/img/{k}.png" alt="figure {k}">'
            f'<footer><a href="/user/{k % 500}">user {k % 500}</a> '
            f'<span class="date">2026-11-{1 + n % 28:02d}</span></footer></article>\n'
        )
        parts.append(post)
        size_so_far += len(post)
        n += 1
    parts.append("</main></body></html>\n")
    return "".join(parts).encode()


async def serve(body: bytes, announce: bool = True) -> web.AppRunner:
    async def page(_request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    async def other(_request: web.Request) -> web.Response:
        return web.Response(text="<p>small</p>", content_type="text/html", charset="utf-8")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/{tail:.*}", other)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    if announce:
        port = runner.addresses[0][1]
        print(f"big page on http://127.0.0.1:{port}/", flush=True)
    return runner


async def _serve_forever(size: int) -> None:
    await serve(make_page(size))
    await asyncio.Event().wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1_000_000)
    args = p.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(args.size))


if __name__ == "__main__":
    main()
