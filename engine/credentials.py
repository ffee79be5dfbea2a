"""Credentials given in a root URL (http://alice:secret@host/): sent, never shown or written.

`normalize` writes every password as "***" (alice:***@host), so no URL the crawl keeps,
and so no report, record, recording or screen, can hold one. The secrets stay here, by
origin and user, and only the request that goes out (`Credentials.request`) carries one:
in an Authorization header (HTTP basic, as aiohttp sends a URL's userinfo), with the
userinfo taken out of the URL sent.

Only the roots' passwords are kept: one a crawled page writes into a link is the page's,
not the user's to send; such a link is fetched with no Authorization at all.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from yarl import URL

from .observe.text import PASSWORD_MASK, mask_userinfo
from .urls import normalize


def _key(url: URL) -> tuple[str, str]:
    return str(url.origin()), url.user or ""


class Credentials:
    """Passwords by (origin, user). Its repr names no password."""

    def __init__(self) -> None:
        self._passwords: dict[tuple[str, str], str] = {}

    @classmethod
    def take(cls, urls: Iterable[str]) -> tuple[tuple[str, ...], Credentials]:
        """`urls` with every password masked, and the passwords they held.

        A URL that is not http(s) is masked as text, so an error message that quotes it
        gives nothing away either."""
        credentials = cls()
        masked = tuple(credentials.keep(url) for url in urls)
        return masked, credentials

    def keep(self, url: str) -> str:
        """Remember `url`'s password, if it has one; `url` as it may be shown."""
        masked = mask_userinfo(url)
        if normalize(url) is None:
            return masked
        try:
            parsed = URL(url.strip())
        except ValueError:
            return masked
        password = parsed.password
        if password and password != PASSWORD_MASK:
            self._passwords[_key(parsed)] = password
        return masked

    def request(self, url: str) -> tuple[str, str | None]:
        """The URL to send for `url` (normalised), with no userinfo, and the value of its
        Authorization header (None: send none)."""
        if "@" not in url:
            return url, None  # the common case, without parsing
        parsed = URL(url)
        if parsed.user is None and parsed.password is None:
            return url, None
        password = self._passwords.get(_key(parsed))
        if password is None:
            if parsed.password:
                return str(parsed.with_user(None)), None  # a page's password: not ours
            password = ""  # "user@host": the user alone, as aiohttp sends it
        token = base64.b64encode(f"{parsed.user or ''}:{password}".encode()).decode("ascii")
        return str(parsed.with_user(None)), f"Basic {token}"

    def __bool__(self) -> bool:
        return bool(self._passwords)

    def __repr__(self) -> str:
        return f"<Credentials for {len(self._passwords)} origin(s) and user(s)>"
