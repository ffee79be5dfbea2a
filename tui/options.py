"""Command-line options shared by `crawl` and `tui`, and their translation to configs."""

from __future__ import annotations

import argparse

from crawlscope.engine.config import DEFAULT_USER_AGENT, CrawlConfig
from crawlscope.engine.sites.demo import DemoConfig


def count(minimum: int, maximum: int | None = None) -> type[int]:
    """An argparse type: a whole number from `minimum` (to `maximum`, when given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if maximum is not None and not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be from {minimum} to {maximum}, not {value}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    parse.__name__ = "count"
    return parse  # type: ignore[return-value]


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _positive_seconds(text: str) -> float:
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def add_crawl_options(parser: argparse.ArgumentParser) -> None:
    d = CrawlConfig(roots=("http://example.com/",))
    p = parser.add_argument
    # The chapter's crawl.py spells these with underscores; both spellings work.
    p(
        "--max-tasks",
        "--max_tasks",
        type=count(1),
        default=d.max_tasks,
        metavar="N",
        help=f"worker tasks (default {d.max_tasks})",
    )
    p(
        "--max-redirect",
        "--max_redirect",
        type=count(0),
        default=d.max_redirect,
        metavar="N",
        help=f"redirects followed per URL (default {d.max_redirect})",
    )
    p(
        "--max-tries",
        "--max_tries",
        type=count(1),
        default=d.max_tries,
        metavar="N",
        help=f"tries per URL on connection errors and timeouts (default {d.max_tries})",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--strict",
        dest="strict",
        action="store_true",
        default=True,
        help="stay on the roots' hosts (www. ignored) and ports (default)",
    )
    scope.add_argument(
        "--lenient",
        dest="strict",
        action="store_false",
        help="allow any host sharing the roots' last two labels",
    )
    p(
        "--exclude",
        action="append",
        default=[],
        metavar="REGEX",
        help="skip URLs matching this regex (repeatable)",
    )
    p("--max-pages", type=count(0), default=0, metavar="N", help="stop queueing after N URLs")
    p("--max-depth", type=count(0), default=0, metavar="N", help="follow links N levels deep")
    p(
        "--timeout",
        type=_positive_seconds,
        default=d.total_timeout,
        metavar="S",
        help=f"total seconds per request (default {d.total_timeout:g})",
    )
    p(
        "--connect-timeout",
        type=_positive_seconds,
        default=d.connect_timeout,
        metavar="S",
        help=f"seconds to connect (default {d.connect_timeout:g})",
    )
    p(
        "--read-timeout",
        type=_positive_seconds,
        default=d.read_timeout,
        metavar="S",
        help=f"seconds between reads (default {d.read_timeout:g})",
    )
    p(
        "--max-size",
        type=count(1),
        default=d.max_size,
        metavar="BYTES",
        help=f"largest body read, after decompression (default {d.max_size})",
    )
    p(
        "--max-links",
        type=count(1),
        default=d.max_links,
        metavar="N",
        help=f"links taken from one page (default {d.max_links})",
    )
    p(
        "--max-url-length",
        type=count(1),
        default=d.max_url_length,
        metavar="N",
        help=f"longer URLs are filtered (default {d.max_url_length})",
    )
    p(
        "--ignore-robots",
        dest="obey_robots",
        action="store_false",
        help="do not fetch or obey robots.txt (it is obeyed by default)",
    )
    p(
        "--per-host",
        type=count(0),
        default=d.per_host,
        metavar="N",
        help=f"requests in flight per host, 0 for no limit (default {d.per_host})",
    )
    p(
        "--delay",
        type=seconds,
        default=d.host_delay,
        metavar="S",
        help="seconds between requests to one host (robots.txt Crawl-delay wins if larger)",
    )
    p(
        "--user-agent",
        default=None,
        metavar="TEXT",
        help=f"User-Agent (default {DEFAULT_USER_AGENT})",
    )
    p(
        "--contact",
        metavar="EMAIL|URL",
        help="how a site owner can reach you, added to the User-Agent",
    )
    p("--output", "-o", metavar="FILE", help="write one JSON line per fetch to FILE")


def add_demo_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    prefix: str = "",
    defaults: DemoConfig | None = None,
) -> None:
    d = defaults or DemoConfig()
    p = parser.add_argument
    p(
        f"--{prefix}pages",
        type=count(1),
        default=d.pages,
        metavar="N",
        help=f"pages on the demo site (default {d.pages})",
    )
    p(
        f"--{prefix}links",
        type=count(0),
        default=d.links_per_page,
        metavar="N",
        help=f"links per demo page (default {d.links_per_page})",
    )
    p(
        f"--{prefix}latency",
        type=seconds,
        default=d.latency,
        metavar="S",
        help="seconds the demo site waits before each response",
    )
    p(
        f"--{prefix}jitter",
        type=seconds,
        default=d.jitter,
        metavar="S",
        help="extra random 0..S seconds per response",
    )
    p(
        f"--{prefix}error-rate",
        type=float,
        default=d.error_rate,
        metavar="F",
        help="fraction of demo pages answering 500",
    )
    p(f"--{prefix}seed", type=int, default=d.seed, metavar="N", help="demo site seed")
    p(
        f"--{prefix}hostile",
        action="store_true",
        help="also serve the hostile cases under /hostile/ (huge, slow, broken, malicious)",
    )


def crawl_config(args: argparse.Namespace, roots: list[str]) -> CrawlConfig:
    """May raise ConfigError, whose message is for the user."""
    return CrawlConfig(
        roots=tuple(roots),
        max_tasks=args.max_tasks,
        max_redirect=args.max_redirect,
        max_tries=args.max_tries,
        strict=args.strict,
        exclude=tuple(args.exclude),
        max_pages=args.max_pages,
        max_depth=args.max_depth,
        total_timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        user_agent=user_agent(args.user_agent, args.contact),
        max_size=args.max_size,
        max_links=args.max_links,
        max_url_length=args.max_url_length,
        obey_robots=args.obey_robots,
        per_host=args.per_host,
        host_delay=args.delay,
    )


def user_agent(given: str | None, contact: str | None) -> str:
    agent = given or DEFAULT_USER_AGENT
    if contact:
        # The convention site owners look for: "+" and a way to reach the operator.
        agent = f"{agent} (+{contact})"
    return agent


def demo_config(args: argparse.Namespace, prefix: str = "") -> DemoConfig:
    """May raise ValueError, whose message is for the user."""
    key = prefix.replace("-", "_")
    return DemoConfig(
        pages=getattr(args, f"{key}pages"),
        links_per_page=getattr(args, f"{key}links"),
        latency=getattr(args, f"{key}latency"),
        jitter=getattr(args, f"{key}jitter"),
        error_rate=getattr(args, f"{key}error_rate"),
        seed=getattr(args, f"{key}seed"),
        hostile=getattr(args, f"{key}hostile", False),
    )
