"""Kept-alive connections that stay in step with their requests.

HTTP/1.1 has no request ids: a client takes the next response on a connection as the
answer to the request it sent last. A server that writes more than it declared (a body
that runs past its Content-Length), or writes when nobody asked (a late, unsolicited
302), puts bytes on a pooled connection that the next request would read as its own
answer. Two rules keep every answer with the URL it belongs to:

- a pooled connection on which anything has arrived since its last response was read is
  closed instead of reused (aiohttp checks this when a response is released, but not
  when it hands the connection out again, by which time more bytes may have come);
- a protocol error on a reused connection may be the last server's leftovers, so the
  request is tried once more on a new connection before the error counts (`Attempt`
  says whether the connection was reused).

A response that arrives while a request is in flight cannot be told from its answer by
any HTTP/1.1 client; only the bytes that follow it show the connection is out of step,
and then it is not reused.
"""

from __future__ import annotations

import functools
import select
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import aiohttp
from aiohttp.client_proto import ResponseHandler

# Errors that can mean "this was not the answer to my request" when they happen on a
# reused connection: a status line or header that does not parse (aiohttp raises
# ClientResponseError for it) or a body whose framing broke. Dropped connections
# (ServerDisconnectedError, ClientOSError) are retried once by aiohttp itself.
OUT_OF_STEP = (aiohttp.ClientResponseError, aiohttp.ClientPayloadError)


@dataclass(slots=True, eq=False)
class Attempt:
    """One request, as InStepConnector and SteppedRequest see it (set in TRYING)."""

    worker: object  # whoever made the request, for `sent` to report its progress
    # Awaited once the request's head is on the wire (the worker now awaits an answer).
    sent: Callable[[], Awaitable[None]] | None = None
    reused: bool = False  # the connection came from the pool rather than a new connect


# The try under way in this task, set around one request. aiohttp's trace hooks would tell
# the same, but a session with a TraceConfig builds a Trace per request and sends a signal
# at each of its steps: about a tenth of what fetching a page costs, for two facts.
TRYING: ContextVar[Attempt | None] = ContextVar("crawlscope_attempt", default=None)


class SteppedRequest(aiohttp.ClientRequest):
    """A request that tells its Attempt when its head has been sent."""

    async def send(self, conn: Any) -> aiohttp.ClientResponse:
        response = await super().send(conn)
        attempt = TRYING.get()
        if attempt is not None and attempt.sent is not None:
            await attempt.sent()
        return response


def in_step(protocol: Any) -> bool:
    """Whether an idle pooled connection may carry another request: still open, nothing
    left unread from its last response, and nothing arrived since (not even bytes the
    event loop has not read off the socket yet)."""
    if protocol is None or protocol.should_close or not protocol.is_connected():
        return False
    sock = protocol.transport.get_extra_info("socket")
    if sock is None:
        return True  # not a socket we can ask; aiohttp's own checks above still hold
    # poll, not select: select cannot watch descriptors numbered 1024 and up.
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return not poller.poll(0)


class OneTimerHandler(ResponseHandler):
    """aiohttp's connection protocol, its read timeout (sock_read) kept with one timer.

    aiohttp cancels the timer and makes another each time bytes arrive: a timer handle,
    a push on the loop's heap and a cancelled one left in it, two or three times a page
    (about 5% of a crawl's CPU). Here bytes only move the deadline on; the timer, when it
    fires before the deadline, is set again for it. A connection silent for the read
    timeout fails as before, and the timer is dropped where aiohttp drops its own.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline = 0.0

    def _reschedule_timeout(self) -> None:
        timeout = self._read_timeout
        if not timeout:
            self._drop_timeout()
            return
        self._read_deadline = self._loop.time() + timeout
        if self._read_timeout_handle is None:
            self._read_timeout_handle = self._loop.call_at(self._read_deadline, self._read_due)

    def _read_due(self) -> None:
        if self._loop.time() < self._read_deadline:
            self._read_timeout_handle = self._loop.call_at(self._read_deadline, self._read_due)
            return
        self._read_timeout_handle = None
        self._on_read_timeout()


class InStepConnector(aiohttp.TCPConnector):
    """A TCPConnector that reuses a pooled connection only while it is `in_step`, and
    whose connections keep their read timeout with one timer (`OneTimerHandler`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # aiohttp's protocol factory (private, as _get is: tests/engine/test_per_page.py).
        self._factory = cast(
            "functools.partial[ResponseHandler]",
            functools.partial(OneTimerHandler, loop=self._loop),
        )

    async def _get(self, *args: Any, **kwargs: Any) -> Any:
        # aiohttp's pool lookup (a private method: pinned by tests/engine/test_connections.py).
        while True:
            connection = await super()._get(*args, **kwargs)
            if connection is None or in_step(connection.protocol):
                break
            connection.close()  # out of step: closed, and the pool is asked again
        attempt = TRYING.get()
        if attempt is not None:
            # None: aiohttp opens a new connection. The last word wins, as aiohttp may
            # ask again after a dropped connection.
            attempt.reused = connection is not None
        return connection
