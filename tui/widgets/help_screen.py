"""The `?` screen: the keys, and each worker state in the chapter's terms."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# crawlscope: what you are looking at

Each row of **workers** is one `asyncio.Task` running the chapter's worker loop:
`url = await q.get()`, fetch it, `q.task_done()`, again. The engine writes the
state at each step; *suspended at* is read from the task itself, by walking
`task.get_coro().cr_await` down to the innermost coroutine, with the file and
line where it sits in `await` right now. In slow motion (`s`) each worker lingers
inside the first real await of each state; once that await is done its row reads
*(slowed)* and the await. A state that never waits is not lingered in; fetch times
and latencies leave the lingers out.

- **waiting**: suspended in `await q.get()`. The queue is empty, so `get()` parked
  a Future and gave control back to the loop; a `put()` will resolve it. With URLs
  queued, `get()` returns at once and the worker goes straight to its next URL.
- **robots**: waiting for the host's robots.txt, fetched once per host before its
  first page; every worker with a URL on that host waits on the same Future.
- **throttled**: waiting for the per-host limit (`--per-host`) or delay (`--delay`,
  or the site's Crawl-delay) before sending its request.
- **connecting**: aiohttp is getting a connection (DNS, the TCP handshake, TLS, or
  a free slot in the pool), each a Future resolved when the socket is ready.
- **headers**: the request is sent; suspended until the status line and headers
  arrive.
- **body**: reading the response body, one `await` on the socket per chunk. A
  small page often arrives whole with its headers: nothing is awaited, no **body**.
- **parsing**: BeautifulSoup extracts the links. Plain CPU work with no `await`, so
  the loop runs nothing else meanwhile: every other row stands still. On a busy
  crawl a row may read *Turns.take*: its page waits for a later pass of the loop,
  so that no pass parses for more than 20 ms and timers (and this screen) stay on
  time.
- **backoff**: the fetch failed on the network; `await asyncio.sleep()` before the
  next try (the chapter's `max_tries`).
- **paused**: held at `await event.wait()` before taking or fetching a URL. A worker
  asked to pause mid-fetch finishes that fetch first; until then its state is
  underlined.
- **cancelled**: its task was cancelled, so `CancelledError` was thrown in at its
  `await`; the URL it held went back on the queue, and nothing is lost.
- **stopped**: it left its loop: removed (in italics while it finishes the fetch in
  hand), or the crawl ended.

*step p99/max* is how long each resume of the worker's coroutine ran on the loop
(a *step*: from the loop calling into it to its next `await` that suspends), the
99th percentile and the longest, kept in fixed log2 buckets. While one step runs,
nothing else does. `enter` shows the selected worker in full: its whole await chain,
from its coroutine down to the Future it waits on, its step and *scheduling delay*
histograms (delay: from the loop's poll for I/O to the step's start, how long the
callbacks queued ahead of it held it back), its time in each state and its last
fetches.

`w` lists the **warnings**, counted on the status line: *loop-blocked* (one step
held the loop over 50 ms: the worker, its URL, and the line where it gave the loop
back), *stuck* (a worker in one state ten times the crawl's usual time for it, and 5 s
at least; a backoff or a host's delay is a wait on purpose, not counted),
*join-stalled* (the unfinished counter still for 5 s while every worker waits on
`q.get()`: join() would wait for ever). With them: the loop's lag over the last
minute and the steps that held it longest.

The **queue** panel shows `q.qsize()`, and the counter `q.join()` waits on: every
`put()` adds one, every `task_done()` takes one away. The crawl ends when it reaches
0. *seen = done + failed + filtered + queued + held + unfetched* always holds.

**Redirect chains** are followed by the crawler itself (`allow_redirects=False`):
*⋈ meets* marks chains that reach a URL another chain reached too (fetched once,
thanks to `seen_urls`); a chain that runs into another part way stops there, and the
other goes on, so each hop is drawn once. *↻ loop* marks a chain that comes back on
itself, and *✂ max_redirect* one whose redirect budget ran out.

| key | action |
|---|---|
| `p` | pause / resume the whole crawl |
| `space` | pause / resume the selected worker |
| `c`, `delete` | cancel the selected worker's task (its URL is queued again) |
| `a`, `+` | add a worker |
| `-` | remove a worker (an idle one at once, else after its fetch) |
| `s` / `S` | slow motion: linger 0, 0.25, 0.5 or 1 s at each state change |
| `enter` | the selected worker in full: await chain, step times, states, fetches |
| `w` | the warnings, and the loop's lag |
| `h` | the hosts screen (below) |
| `ctrl+p` | command palette with the same actions |
| `q` | stop the crawl, quit, and print the report |

The **hosts** screen (`h`) has one row per host (origin), blocked hosts first, then
the busiest: its URLs *queued* (a blocked host's included) and *in flight*, *done* and
*failed*, the answer time *p50* and *p99* (the top of a power-of-two bucket of ms),
when it may *next* be fetched, our *delay* and its robots.txt *Crawl-delay*, the
per-host *limit*, its *robots.txt* (not yet fetched, fetching, allowed: a file's rules
apply, missing: 4xx, all allowed, refused: 5xx or unreachable, all disallowed) and the
share of requests that got no answer (*errors*, red after three in a row). On a crawl
that can be steered: `b` blocks the selected host (its URLs wait, nothing is lost) or
unblocks it, `d` / `D` add or take away 0.5 s of delay, `l` / `L` raise or lower its
limit. In a replay or a read-only view the screen shows the same rows with no keys. On
a cluster (`attach redis://...`) the rows are the processes' added up, and `P` shows
each process's own.

In a replay (`crawlscope replay FILE`) nothing can be steered; the keys move time:
`p` or `space` play and pause, `.` and `,` (or the arrows) step one recorded event,
`]` and `[` change the speed (0.25x to 8x), `pgdn` and `pgup` jump 10%, `home` and `end`
go to the start and the end.

Press `escape`, `?` or `q` to close this screen.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", show=True),
    ]

    def __init__(self, text: str = HELP) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(self.text)
