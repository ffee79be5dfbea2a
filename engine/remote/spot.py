"""Where a monitor listens: a socket bound before anything starts (so its URL can be said
first, and a port in use is an error before a crawl begins), the token that steers, and
what viewers may cost. Light to import: a command line makes one while it checks its
options."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from .limits import DEFAULT_LIMITS, ViewerLimits


@dataclass
class MonitorSpot:
    sock: socket.socket
    token: str
    limits: ViewerLimits = DEFAULT_LIMITS

    @property
    def url(self) -> str:
        """The URL that steers (it carries the token)."""
        from .monitor import socket_url

        return socket_url(self.sock, self.token)
