"""What went wrong with a Redis, in the user's words, and whether waiting can mend it.

A Redis that cannot be reached now may come back (a restart, a network blip): the
crawl waits for it, within a patience. A wrong password, a DB index out of range, a key
of the wrong type or a refused command will be the same in a minute: waiting for it
would hang the crawl, so it is a one-line error at once.
"""

from __future__ import annotations

import re

from redis.connection import parse_url
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    BusyLoadingError,
    RedisError,
    ResponseError,
    TryAgainError,
)

from ..observe.text import printable
from ..records import Fault, describe_exception

PASSING = ("BUSY", "LOADING", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN")


class RedisProblem(Fault):
    """A Redis this crawl cannot go on with; its message is the user's one line."""


def permanent(exc: BaseException) -> bool:
    """Whether waiting cannot mend `exc` (a refused password, a wrong key type, ...)."""
    if isinstance(exc, AuthenticationError | AuthorizationError):
        return True
    if isinstance(exc, BusyLoadingError | TryAgainError):
        return False  # still loading its data, or a moment's refusal: it passes
    # Busy with another client's script, or a replica that lost its master: they pass too.
    if str(exc).startswith(PASSING):
        return False
    return isinstance(exc, ResponseError)


def _parts(url: str) -> dict[str, object]:
    try:
        return dict(parse_url(url))
    except ValueError:
        return {}


def shown_url(url: str) -> str:
    """The Redis URL with its password masked: it goes into messages and logs."""
    if "password" not in _parts(url):
        return url
    scheme, _, rest = url.partition("://")
    place, mark, query = rest.partition("?")
    credentials, at, host = place.rpartition("@")
    if at:
        user = credentials.partition(":")[0]
        place = f"{user}:***@{host}"
    query = re.sub(r"(^|&)password=[^&]*", r"\1password=***", query)
    return f"{scheme}://{place}{mark}{query}"


def what_went_wrong(exc: BaseException, url: str) -> str:
    """One line naming the problem with the Redis at `url`."""
    # The server's words are untrusted (whatever listens at that address wrote them).
    where = printable(shown_url(url))
    text = printable(str(exc))
    if isinstance(exc, AuthenticationError):
        if "password" not in _parts(url):
            return f"Redis at {where} asks for a password, and none was given ({text})"
        return f"Redis at {where} refused the password: {text}"
    if isinstance(exc, AuthorizationError | ResponseError) and text.startswith("NOPERM"):
        return f"Redis at {where} refused a command to this user: {text}"
    if "DB index is out of range" in text:
        return f"Redis at {where}: DB index is out of range (the server has fewer databases)"
    if "WRONGTYPE" in text:
        return f"Redis at {where}: a key of this crawl holds the wrong type of value ({text})"
    if isinstance(exc, ResponseError):
        return f"Redis at {where} refused: {text}"
    if isinstance(exc, RedisError | OSError):
        return f"cannot reach Redis at {where}: {printable(describe_exception(exc))}"
    return f"Redis at {where}: {printable(describe_exception(exc))}"
