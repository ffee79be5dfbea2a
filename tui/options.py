"""Command-line options shared by `crawl` and `tui`, and their translation to configs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from crawlscope.engine.config import DEFAULT_USER_AGENT, CrawlConfig
from crawlscope.engine.sites.demo import DemoConfig


def whole_number(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
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

    parse.__name__ = "whole number"  # argparse names the type in its errors
    return parse


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


@dataclass(frozen=True, slots=True)
class Option:
    """A crawl option that sets one CrawlConfig field, whose default it shows."""

    flags: tuple[str, ...]
    field: str  # the CrawlConfig field, and the name argparse stores it under
    parse: Callable[[str], object]
    metavar: str
    help: str  # "{default}" stands for the field's default


# The chapter's crawl.py spells the first three with underscores; both spellings work.
CRAWL_OPTIONS = (
    Option(("--max-tasks", "--max_tasks"), "max_tasks", whole_number(1), "N",
           "worker tasks (default {default})"),
    Option(("--max-redirect", "--max_redirect"), "max_redirect", whole_number(0), "N",
           "redirects followed per URL (default {default})"),
    Option(("--max-tries", "--max_tries"), "max_tries", whole_number(1), "N",
           "tries per URL on connection errors and timeouts (default {default})"),
    Option(("--max-pages",), "max_pages", whole_number(0), "N", "stop queueing after N URLs"),
    Option(("--max-depth",), "max_depth", whole_number(0), "N", "follow links N levels deep"),
    Option(("--timeout",), "total_timeout", _positive_seconds, "S",
           "total seconds per request (default {default})"),
    Option(("--connect-timeout",), "connect_timeout", _positive_seconds, "S",
           "seconds to connect (default {default})"),
    Option(("--read-timeout",), "read_timeout", _positive_seconds, "S",
           "seconds between reads (default {default})"),
    Option(("--max-size",), "max_size", whole_number(1), "BYTES",
           "largest body read, after decompression (default {default})"),
    Option(("--max-links",), "max_links", whole_number(1), "N",
           "links taken from one page (default {default})"),
    Option(("--max-url-length",), "max_url_length", whole_number(1), "N",
           "longer URLs are filtered (default {default})"),
    Option(("--per-host",), "per_host", whole_number(0), "N",
           "requests in flight per host, 0 for no limit (default {default})"),
    Option(("--delay",), "host_delay", seconds, "S",
           "seconds between requests to one host (robots.txt Crawl-delay wins if larger)"),
    Option(("--max-crawl-delay",), "max_crawl_delay", seconds, "S",
           "a robots.txt Crawl-delay larger than this is capped to it; the report, the "
           "progress line and the TUI say so (default {default})"),
)  # fmt: skip


def add_crawl_options(parser: argparse.ArgumentParser) -> None:
    defaults = CrawlConfig(roots=("http://example.com/",))
    for option in CRAWL_OPTIONS:
        default = getattr(defaults, option.field)
        shown = f"{default:g}" if isinstance(default, float) else default
        parser.add_argument(
            *option.flags,
            dest=option.field,
            type=option.parse,
            default=default,
            metavar=option.metavar,
            help=option.help.format(default=shown),
        )
    # The options that are not one field each: a choice of two, a list, a switch, text.
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
        help="allow any host of a root's registrable domain, by the Public Suffix List "
        "(for www.example.co.uk: example.co.uk and its subdomains, not other .co.uk sites; "
        "for alice.github.io: only alice.github.io and below), on any port; an IP address "
        "or a single-label host such as localhost admits only itself",
    )
    p = parser.add_argument
    p("--exclude", action="append", default=[], metavar="REGEX",
      help="skip URLs matching this regex (repeatable)")  # fmt: skip
    p("--ignore-robots", dest="obey_robots", action="store_false",
      help="do not fetch or obey robots.txt (it is obeyed by default)")  # fmt: skip
    p("--user-agent", default=None, metavar="TEXT",
      help=f"User-Agent (default {DEFAULT_USER_AGENT})")  # fmt: skip
    p("--contact", metavar="EMAIL|URL",
      help="how a site owner can reach you, added to the User-Agent")  # fmt: skip
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
        type=whole_number(1),
        default=d.pages,
        metavar="N",
        help=f"pages on the demo site (default {d.pages})",
    )
    p(
        f"--{prefix}links",
        type=whole_number(0),
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
        **{option.field: getattr(args, option.field) for option in CRAWL_OPTIONS},
        strict=args.strict,
        exclude=tuple(args.exclude),
        obey_robots=args.obey_robots,
        user_agent=user_agent(args.user_agent, args.contact),
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
