"""`crawlscope attach`: watch a crawl running elsewhere, through its monitor's URL or a
cluster's Redis; and how a secret reaches it without a command line."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from crawlscope.engine.exchange.user_files import FileRefused, read_capped
from crawlscope.engine.observe.text import PASSWORD_MASK, mask_userinfo, printable

from .options import frames_per_second

if TYPE_CHECKING:
    from crawlscope.tui.attach import Attached
    from crawlscope.tui.cluster_view import ClusterAttached

# Where `attach` finds a secret that is not in its URL: a command line is readable by
# every user of the machine (/proc/PID/cmdline), the environment and a private file are not.
TOKEN_ENV = "CRAWLSCOPE_TOKEN"
REDIS_PASSWORD_ENV = "CRAWLSCOPE_REDIS_PASSWORD"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attach = sub.add_parser(
        "attach",
        help="watch a crawl running elsewhere, through the URL its --monitor printed, "
        "or a cluster's Redis",
        description="Open the TUI on a crawl that runs in another process (started with "
        "--monitor, or by `crawlscope serve`), or a lecture (`lecture --monitor`, read-only). "
        "With the URL's ?token= the keys steer a crawl; "
        "without, the view is read-only. With a Redis URL and --crawl-id, on every "
        "process of that cluster crawl; whoever reaches Redis can steer it. q closes "
        "this view only: the crawl goes on. A token or a password on a command line can "
        f"be read by every user of the machine: put it in ${TOKEN_ENV} or "
        f"${REDIS_PASSWORD_ENV}, or in a file (--secret-file), instead.",
    )
    attach.add_argument(
        "url", metavar="URL", help="ws://HOST:PORT/crawl[?token=...] or redis://HOST:PORT/DB"
    )
    attach.add_argument("--crawl-id", metavar="NAME", help="with a Redis URL: which crawl")
    attach.add_argument(
        "--read-only", action="store_true",
        help="watch only (the keys that steer are off), whatever token is given",
    )  # fmt: skip
    attach.add_argument(
        "--fps", type=frames_per_second, default=None, metavar="N",
        help="screen refreshes a second, 1 to 30 (default: the TUI's); a key's effect is "
        "drawn at once whatever this is",
    )  # fmt: skip
    attach.add_argument(
        "--secret-file", metavar="FILE",
        help="read the monitor's token, or the Redis password, from FILE's first line "
        f"(default: ${TOKEN_ENV} or ${REDIS_PASSWORD_ENV}, when the URL has none)",
    )  # fmt: skip


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.cluster.lookup import why_not_attach
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.attach import Attached
    from crawlscope.tui.cluster_view import ClusterAttached

    try:
        source = attach_source(args.url, args.crawl_id, args.read_only, args.secret_file)
    except ValueError as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    if isinstance(source, ClusterAttached):
        # A typo in --crawl-id is a line naming the crawls there are, not an empty screen.
        # source.redis_url: with the password from --secret-file or the environment
        missing = why_not_attach(source.redis_url, args.crawl_id)
        if missing is not None:
            print(f"crawlscope: {missing}", file=sys.stderr)
            return 1
    # A driver named in the environment (Textual's TEXTUAL_DRIVER) draws elsewhere.
    web = "TEXTUAL_DRIVER" in os.environ
    if not web and not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("crawlscope: attach needs a terminal", file=sys.stderr)
        return 2
    if isinstance(source, Attached) and is_lecture_url(source.url):
        from crawlscope.tui.lecture.stage_watched import LectureWatchApp

        lecture = LectureWatchApp(source.url)
        lecture.run()
        return lecture.return_code or 0
    app = CrawlScopeApp(source) if args.fps is None else CrawlScopeApp(source, fps=args.fps)
    app.run()
    return app.return_code or 0


def is_lecture_url(url: str) -> bool:
    """Whether `url` is a lecture's monitor (`lecture --monitor`), not a crawl's."""
    from crawlscope.engine.remote.lecture_monitor import LECTURE_PATH

    return urlsplit(url).path == LECTURE_PATH


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def attach_source(
    url: str, crawl_id: str | None, read_only: bool, secret_file: str | None = None
) -> Attached | ClusterAttached:
    """What `attach URL` opens; ValueError with the user's one-line message. A secret
    not in the URL comes from `secret_file`, else the environment, and is put into the
    URL here, in memory only."""
    from crawlscope.tui.attach import Attached
    from crawlscope.tui.cluster_view import ClusterAttached

    if url.startswith(REDIS_SCHEMES):
        if not crawl_id:
            raise ValueError("a Redis URL needs --crawl-id NAME: which crawl to watch")
        password = read_secret(secret_file, REDIS_PASSWORD_ENV)
        if password is not None:
            url = with_password(url, password)
        return ClusterAttached(url, crawl_id, read_only)
    if not url.startswith(("ws://", "wss://")):
        from crawlscope.engine.remote.protocol import TOKEN_PARAM

        token_value = re.compile(rf"([?&]{TOKEN_PARAM}=)[^&#]*")  # never echoed, even in an error
        shown = printable(mask_userinfo(token_value.sub(r"\1" + PASSWORD_MASK, url)))
        raise ValueError(f"not a monitor URL (ws://...) nor a Redis URL (redis://...): {shown}")
    if crawl_id is not None:
        raise ValueError("--crawl-id and a password go with a Redis URL, not a monitor URL")
    if read_only:
        return Attached(with_token(url, None))
    token = read_secret(secret_file, TOKEN_ENV)
    return Attached(url if token is None else with_token(url, token))


SECRET_MAX_BYTES = 64 * 1024  # a token or a password is a line of some dozens of bytes


def read_secret(path: str | None, env: str) -> str | None:
    """The first line of `path`, else $`env`; None when neither gives one."""
    if path is None:
        return os.environ.get(env) or None
    try:  # a regular file only, and small: /dev/zero has no first line to stop at
        line = read_capped(path, SECRET_MAX_BYTES, "a secret file").decode("utf-8")
    except FileRefused as exc:
        raise ValueError(f"--secret-file: {exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"cannot read --secret-file {path}: not UTF-8 text") from None
    line = line.split("\n", 1)[0].rstrip("\r")
    if not line:
        raise ValueError(f"--secret-file {path} is empty")
    return line


def with_token(url: str, token: str | None) -> str:
    """`url` with the control token `token` (None: with none), unless `url` names one
    already and `token` is not None: the URL the user typed wins."""
    from crawlscope.engine.remote.protocol import TOKEN_PARAM

    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if token is not None and any(name == TOKEN_PARAM for name, _ in query):
        return url
    query = [(name, value) for name, value in query if name != TOKEN_PARAM]
    if token is not None:
        query.append((TOKEN_PARAM, token))
    return urlunsplit(parts._replace(query=urlencode(query)))


def with_password(url: str, password: str) -> str:
    """Redis `url` with `password`, unless it has one already."""
    parts = urlsplit(url)
    if parts.password is not None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    userinfo = f"{user}:{quote(password, safe='')}@"
    return urlunsplit(parts._replace(netloc=userinfo + host))
