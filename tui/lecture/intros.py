"""What the lecture says of each stage as it opens it: on the live screens, and on a
recorded or watched lecture's, which show the same screens."""

from __future__ import annotations

INTROS = {
    "callbacks": (
        "Stage 1: callbacks. One thread, one loop: select() says which sockets are ready, "
        "and the loop calls the function registered for each. A fetch is a chain of those "
        "callbacks (connected, then read_response), and its state lives in a Fetcher "
        "object, because no stack survives from one callback to the next. Press n to run "
        "one callback, ← to step back, p to let it run, l to see which fetch each step moved "
        "on, → for stage 2, ? for every key."
    ),
    "generators": (
        "Stage 2: coroutines from generators. Each worker is a generator that yields a "
        "Future when it must wait; a Task drives it with send() and resumes it when that "
        "Future is resolved. The yield-from chain below each task is its suspended stack, "
        "the one callbacks lost. Press n to step, ← to step back, p to run, l to see which "
        "task ran at each step, → stage 3, ? for every key."
    ),
}
# What the lecture says before handing over to the main TUI (stage 3).
ASYNCIO_INTRO = (
    "Stage 3: asyncio. The same crawl written with async/await, aiohttp and asyncio's "
    "Queue. The loop, the Futures and the Tasks are now the standard library's, so there "
    "is no loop of ours to step: use slow motion (s) and pause (p) to watch it instead, "
    "and ← to go back to stage 2."
)
