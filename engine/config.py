"""What a crawl is asked to do: one frozen dataclass, checked once up front."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from .credentials import Credentials
from .records import RECORD_TEXT_LIMIT
from .urls import normalize

DEFAULT_USER_AGENT = "crawlscope/0.1"
# A robots.txt Crawl-delay above this is capped to it unless the user says otherwise: a
# day per page (sites do ask for that) would stall a crawl with no sign of why.
DEFAULT_MAX_CRAWL_DELAY = 30.0


class ConfigError(ValueError):
    """A setting that cannot work; the message is meant for the user as it is."""


@dataclass(frozen=True)
class CrawlConfig:
    roots: tuple[str, ...]
    max_tasks: int = 10
    max_redirect: int = 10
    max_tries: int = 4
    strict: bool = True
    exclude: tuple[str, ...] = ()
    max_pages: int = 0  # 0 = no limit
    max_depth: int = 0  # 0 = no limit
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 60.0
    backoff: float = 0.1  # first retry waits this long, doubling after each try
    max_backoff: float = 5.0
    user_agent: str = DEFAULT_USER_AGENT
    max_size: int = 10 * 1024 * 1024  # bytes of body, counted after decompression
    max_url_length: int = 2083
    max_links: int = 5000  # links taken from one page; the rest are ignored
    obey_robots: bool = True
    per_host: int = 8  # requests in flight per host (0: no limit)
    host_delay: float = 0.0  # seconds between request starts to one host
    max_crawl_delay: float = DEFAULT_MAX_CRAWL_DELAY  # a larger Crawl-delay is capped to it
    sitemaps: bool = False  # also take roots from the roots' sitemaps (sitemaps.py)
    compiled_exclude: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    # The roots' passwords, set per instance. Not a field, so asdict(), repr() and == never
    # see them (a copy made by dataclasses.replace() has none: its roots hold "***").
    credentials: ClassVar[Credentials] = Credentials()

    def __post_init__(self) -> None:
        if isinstance(self.roots, str):
            # A lone string would otherwise be taken as a sequence of one-letter roots.
            object.__setattr__(self, "roots", (self.roots,))
        # The roots' passwords move to `credentials` and "***" takes their place, so
        # nothing that prints or writes a config (a recording does) can give one away.
        roots, credentials = Credentials.take(self.roots)
        object.__setattr__(self, "roots", roots)
        object.__setattr__(self, "credentials", credentials)
        object.__setattr__(self, "exclude", tuple(self.exclude))
        self._check()

    def _check(self) -> None:
        if not self.roots:
            raise ConfigError("at least one root URL is needed")
        for root in self.roots:
            if normalize(root) is None:
                raise ConfigError(f"not an http(s) URL: {root!r}")
        for name in ("max_tasks", "max_tries"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("max_size", "max_url_length", "max_links"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.max_url_length > RECORD_TEXT_LIMIT:  # a URL fetched is recorded whole
            raise ConfigError(
                f"max_url_length must be at most {RECORD_TEXT_LIMIT}, not {self.max_url_length}"
            )
        for name in ("max_redirect", "max_pages", "max_depth", "per_host"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be 0 or more, not {getattr(self, name)}")
        for name in ("connect_timeout", "read_timeout", "total_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be more than 0 seconds, not {getattr(self, name)}")
        if self.backoff < 0 or self.max_backoff < 0 or self.host_delay < 0:
            raise ConfigError("backoff and host_delay must not be negative")
        if not self.max_crawl_delay >= 0:  # NaN too: no Crawl-delay would compare with it
            raise ConfigError(
                f"max_crawl_delay must be 0 or more seconds, not {self.max_crawl_delay}"
            )
        patterns = []
        for pattern in self.exclude:
            try:
                patterns.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigError(f"bad --exclude pattern {pattern!r}: {exc}") from None
        object.__setattr__(self, "compiled_exclude", tuple(patterns))

    @property
    def root_urls(self) -> list[str]:
        return [url for url in (normalize(root) for root in self.roots) if url is not None]
