"""URL normalisation and the chapter's host scoping rules.

Every URL the crawler keeps has gone through `normalize`, so that two spellings of
one page (upper-case host, default port, dot segments, a fragment) are seen once.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList
from yarl import URL

from .observe.text import PASSWORD_MASK

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize(url: str, base: str | URL | None = None) -> str | None:
    """The canonical form of `url` (resolved against `base`), or None if it is not http(s).

    Lower-case scheme and host, IDN hosts in punycode, default port dropped, dot segments
    resolved, percent-escapes in one spelling (unreserved characters decoded, the rest
    upper-case), tabs and newlines removed as browsers do, fragment dropped, empty path
    made "/", a password written as "***" (credentials.py keeps the roots' own). Anything
    unparseable is None, never an exception.
    """
    try:
        parsed = URL(url.strip())
        if base is not None:
            parsed = (base if isinstance(base, URL) else URL(base)).join(parsed)
        if parsed.scheme not in _DEFAULT_PORTS or not parsed.raw_host:
            return None
        if parsed.raw_fragment:
            parsed = parsed.with_fragment(None)
        if parsed.password:
            # No URL the crawl keeps holds a secret, so nothing that shows one can leak it.
            parsed = parsed.with_password(PASSWORD_MASK)
        if parsed.raw_path == "/" and not parsed.raw_query_string:
            # yarl prints an empty path as nothing; "http://h" and "http://h/" are one page.
            parsed = parsed.with_path("/")
        return str(parsed)
    except (ValueError, UnicodeError, TypeError, IndexError):
        # yarl rejects bad ports, broken IPv6 literals and hosts IDNA cannot encode; and
        # some malformed authorities ("h[::1]@") trip it into an IndexError.
        return None


# URL text up to its path -> its origin. yarl's origin() costs a parse (a twentieth of a
# page's CPU in bench/per_core.py's profile), and a crawl asks for the origin of every URL
# it queues, takes and fetches, on a few hosts.
_origins: dict[str, str] = {}
_ORIGINS_KEPT = 100_000  # a crawl of very many hosts: no cache beats a huge one


def origin_of(url: str) -> str:
    """scheme://host[:port], the unit robots.txt and the per-host limit apply to; raises
    ValueError for a URL with no host."""
    # The scheme and the authority are all an origin is read from, and the authority ends
    # at the first "/", "?" or "#" after "://": URLs alike up to that "/" share an origin.
    cut = url.find("/", url.find("://") + 3)
    if cut < 0:
        return str(URL(url).origin())  # no path: nothing worth keeping
    prefix = url[:cut]
    origin = _origins.get(prefix)
    if origin is None:
        origin = str(URL(prefix).origin())  # a ValueError is not kept: raised each time
        if len(_origins) >= _ORIGINS_KEPT:
            _origins.clear()
        _origins[prefix] = origin
    return origin


def host_of(url: str) -> str:
    return urlsplit(url).hostname or ""


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


@functools.cache
def _suffix_list() -> PublicSuffixList:
    # The list shipped inside the package, read once (about 50 ms) and only by a lenient
    # crawl; publicsuffixlist never fetches it or writes a cache, so the crawl needs no
    # network for it and gives the same answer offline.
    return PublicSuffixList()


# A page's links are mostly on a few hosts; the lookup costs about 11 us, a hit 0.1 us.
@functools.lru_cache(maxsize=4096)
def registrable_domain(host: str) -> str:
    """The part of `host` one registrant controls, by the Public Suffix List with its
    private section: "www.example.co.uk" -> "example.co.uk", "alice.github.io" ->
    "alice.github.io" (github.io is a public suffix). A host that has none (an IP
    address, "localhost", a public suffix itself) is its own.
    """
    if not host or _is_ip(host):
        return host
    return _suffix_list().privatesuffix(host) or host


_KEYS_KEPT = 4096  # hosts whose scope key a Scope keeps


class Scope:
    """Which URLs the crawl may fetch.

    strict: the same host as a root, "www." ignored, and the same port, so a crawl of
    one local server does not wander to another on the same machine. lenient: the same
    registrable domain as a root (`registrable_domain`), any port. IP hosts always match
    exactly. Exclude patterns are regexes searched anywhere in the URL.
    """

    def __init__(
        self,
        roots: Iterable[str],
        strict: bool = True,
        exclude: Iterable[re.Pattern[str]] = (),
        max_length: int = 2083,
    ) -> None:
        self.strict = strict
        self.exclude = tuple(exclude)
        self.max_length = max_length
        self._known: dict[str, tuple[str, int | None]] = {}
        self._keys = {self._key(url) for url in roots}

    def _key(self, url: str) -> tuple[str, int | None]:
        # By the URL's scheme and authority, which are all it depends on: a crawl asks
        # of the same few hosts for every link (urlsplit and ipaddress cost ~10 us).
        end = url.find("/", url.find("//") + 2) if "//" in url else -1
        authority = url[:end] if end > 0 else url
        known = self._known.get(authority)
        if known is None:
            known = self._key_of(authority)
            if len(self._known) >= _KEYS_KEPT:
                self._known.clear()
            self._known[authority] = known
        return known

    def _key_of(self, url: str) -> tuple[str, int | None]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        if _is_ip(host):
            return (host, port if self.strict else None)
        if self.strict:
            return (_strip_www(host), port)
        return (registrable_domain(host), None)

    def why_not(self, url: str) -> str | None:
        """None if `url` (already normalised) may be fetched, else the reason it may not."""
        if len(url) > self.max_length:
            return f"URL longer than {self.max_length}"
        if self._key(url) not in self._keys:
            return "out of scope"
        for pattern in self.exclude:
            if pattern.search(url):
                return f"excluded by {pattern.pattern!r}"
        return None
