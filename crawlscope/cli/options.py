"""Command-line options shared by the commands, and their translation to configs."""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO

from crawlscope.engine.config import DEFAULT_USER_AGENT, CrawlConfig
from crawlscope.engine.exchange.feeds import FORMATS
from crawlscope.engine.exchange.user_files import FileRefused, read_capped, shown_path
from crawlscope.engine.observe.text import printable
from crawlscope.engine.remote.limits import (
    HANDSHAKE_SECONDS,
    MAX_BEHIND_BYTES,
    MAX_BEHIND_SECONDS,
    MAX_VIEWERS,
    TOTAL_BEHIND_BYTES,
    ViewerLimits,
    origin_of,
)
from crawlscope.engine.sites.demo_config import DemoConfig


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


def terminal_size(
    minimum: tuple[int, int], maximum: tuple[int, int]
) -> Callable[[str], tuple[int, int]]:
    """An argparse type: COLSxROWS (120x40), each within `minimum` and `maximum`."""

    def parse(text: str) -> tuple[int, int]:
        cols, _, rows = text.lower().partition("x")
        try:
            size = (int(cols), int(rows))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not COLSxROWS (say 120x40): {text!r}") from None
        if not all(low <= n <= high for low, n, high in zip(minimum, size, maximum, strict=True)):
            raise argparse.ArgumentTypeError(
                f"from {minimum[0]}x{minimum[1]} to {maximum[0]}x{maximum[1]}, not {text}"
            )
        return size

    parse.__name__ = "size"
    return parse


def frames_per_second(text: str) -> float:
    """--fps: a screen's refreshes a second, 1 to 30."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"must be from 1 to 30, not {text}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def byte_size(text: str) -> int:
    """An argparse type: bytes, as a whole number or with a binary unit (512KiB, 10M)."""
    number = text.strip()
    unit = number.lstrip("0123456789").strip()
    factor = _BYTE_UNITS.get(unit.lower())
    digits = number[: len(number) - len(unit)].strip() if unit else number
    if factor is None or not digits.isdigit():
        raise argparse.ArgumentTypeError(f"not a size in bytes like 10MiB or 4096: {text!r}")
    value = int(digits) * factor
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, not {text}")
    return value


byte_size.__name__ = "size"  # argparse names the type in its errors
_BYTE_UNITS = {
    "": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2,
    "g": 1024**3, "gib": 1024**3,
}  # fmt: skip


def human_bytes(size: object) -> str:
    """10485760 -> "10 MiB": a byte count as --help shows it."""
    assert isinstance(size, int)
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


def human_seconds(value: object) -> str:
    assert isinstance(value, float | int)
    return f"{value:g} s"


def no_limit_when_0(value: object) -> str:
    return "0: no limit" if value == 0 else str(value)


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
    show: Callable[[object], str] = str  # how --help shows the default


# The chapter's crawl.py spells the first three with underscores; both spellings work.
CRAWL_OPTIONS = (
    Option(("--max-tasks", "--max_tasks"), "max_tasks", whole_number(1), "N",
           "worker tasks (default {default})"),
    Option(("--max-redirect", "--max_redirect"), "max_redirect", whole_number(0), "N",
           "redirects followed per URL (default {default})"),
    Option(("--max-tries", "--max_tries"), "max_tries", whole_number(1), "N",
           "tries per URL on connection errors and timeouts (default {default})"),
    Option(("--max-pages",), "max_pages", whole_number(0), "N",
           "fetch at most N pages: each redirect hop and each failed fetch is one, a URL "
           "robots.txt or the scope filters is none; with --state, earlier runs' pages "
           "count too (default {default})", no_limit_when_0),
    Option(("--max-depth",), "max_depth", whole_number(0), "N",
           "follow links N levels deep (default {default})", no_limit_when_0),
    Option(("--timeout",), "total_timeout", _positive_seconds, "S",
           "total seconds per request (default {default})", human_seconds),
    Option(("--connect-timeout",), "connect_timeout", _positive_seconds, "S",
           "seconds to connect (default {default})", human_seconds),
    Option(("--read-timeout",), "read_timeout", _positive_seconds, "S",
           "seconds between reads (default {default})", human_seconds),
    Option(("--max-size",), "max_size", byte_size, "BYTES",
           "largest body read, after decompression; a number of bytes or with a unit "
           "(512KiB, 10MiB) (default {default})", human_bytes),
    Option(("--max-links",), "max_links", whole_number(1), "N",
           "links taken from one page (default {default})"),
    Option(("--max-url-length",), "max_url_length", whole_number(1), "N",
           "longer URLs are filtered (default {default})"),
    Option(("--per-host",), "per_host", whole_number(0), "N",
           "requests in flight per host (default {default})", no_limit_when_0),
    Option(("--delay",), "host_delay", seconds, "S",
           "seconds between requests to one host (robots.txt Crawl-delay wins if larger) "
           "(default {default})", human_seconds),
    Option(("--max-crawl-delay",), "max_crawl_delay", seconds, "S",
           "a robots.txt Crawl-delay larger than this is capped to it; the report, the "
           "progress line and the TUI say so (default {default})", human_seconds),
)  # fmt: skip


def add_crawl_options(parser: argparse.ArgumentParser) -> None:
    defaults = CrawlConfig(roots=("http://example.com/",))
    for option in CRAWL_OPTIONS:
        default = getattr(defaults, option.field)
        parser.add_argument(
            *option.flags,
            dest=option.field,
            type=option.parse,
            default=default,
            metavar=option.metavar,
            help=option.help.format(default=option.show(default)),
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
    p("--output", "-o", action="append", default=[], metavar="FILE",
      help="write a record per fetch (and per filtered URL) to FILE, in the format its "
      "extension names: .jsonl JSON Lines, .csv CSV with a header row, .json one JSON "
      "array; any other name JSON Lines; - is JSON Lines on stdout (the report then goes "
      "to stderr); repeatable")  # fmt: skip
    p("--format", dest="feed_format", choices=FORMATS,
      help="write every --output in this format, whatever its extension")  # fmt: skip
    p("--sitemaps", action="store_true",
      help="also start from the URLs of the roots' sitemaps (robots.txt's Sitemap: lines "
      "and /sitemap.xml; indexes and .gz included), at depth 0, within the same scope "
      "and limits as pages")  # fmt: skip
    p("--report", metavar="FILE",
      help="write the whole report to FILE; print only its totals and where it went")  # fmt: skip


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
        sitemaps=args.sitemaps,
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


# ---- roots without a scheme ------------------------------------------------------------

_HOST = re.compile(r"(?:[\w-]+\.)*[\w-]+(?::\d+)?|\[[0-9a-fA-F:.]+\](?::\d+)?")


def with_scheme(root: str) -> str | None:
    """https://HOST/... for a root written without a scheme (example.com, host:8080/x), as
    browsers and wget take it; None for anything else (a URL, or what is no host)."""
    if "://" in root:
        return None
    host, slash, rest = root.partition("/")
    if not _HOST.fullmatch(host):
        return None
    return f"https://{host}/{rest}" if slash else f"https://{host}/"


def take_roots(roots: list[str], err: TextIO) -> list[str]:
    """The roots as given, those without a scheme taken as https, each said on `err`."""
    taken = []
    for root in roots:
        url = with_scheme(root)
        if url is not None:
            print(f"crawlscope: {printable(root)} has no scheme: crawling {printable(url)}",
                  file=err)  # fmt: skip
        taken.append(url or root)
    return taken


# ---- the config file ---------------------------------------------------------------------

CONFIG_FILE = "crawlscope.toml"  # read from the working directory when there is no --config
_NOT_KEYS = ("help", "version", "config")  # options no config file may set


class ConfigFileError(Exception):
    """A config file that cannot be used; the message (one line) names the file and key."""


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"read options from this TOML file (default: ./{CONFIG_FILE} if there is one); "
        "its keys are the long options (max-tasks = 20); the command line wins",
    )


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def config_keys(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every long option of `parser`, as a config key ("max-tasks"), and its action."""
    keys = {}
    for action in parser._actions:
        for flag in action.option_strings:
            key = flag.removeprefix("--")
            if flag.startswith("--") and key not in _NOT_KEYS:
                keys[key] = action
    return keys


CONFIG_MAX_BYTES = 1024 * 1024  # options, one a line: a few kB


def read_config_file(path: Path) -> dict[str, object]:
    """The TOML of a regular file of at most CONFIG_MAX_BYTES, read only if it is one."""
    try:
        data = read_capped(path, CONFIG_MAX_BYTES, "a config file")
        return tomllib.loads(data.decode("utf-8"))
    except FileRefused as exc:
        raise ConfigFileError(str(exc)) from None
    except UnicodeDecodeError:
        raise ConfigFileError(f"{shown_path(path)}: not valid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{shown_path(path)}: not valid TOML: {exc}") from None


def _convert(action: argparse.Action, value: object) -> object:
    """A config value as the option would take it: ArgumentTypeError/ValueError if not."""
    # bool is an int to Python, but true is no number to a user.
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise argparse.ArgumentTypeError(f"expected a value like {action.metavar or 'TEXT'}")
    parse: Callable[[str], object] = action.type or str  # type: ignore[assignment]
    converted = parse(str(value))
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise argparse.ArgumentTypeError(f"must be one of {choices}, not {value!r}")
    return converted


def _setting(action: argparse.Action, value: object) -> tuple[bool, object]:
    """(whether the key sets anything, the value for its dest)."""
    if action.nargs == 0:  # a switch: true is the switch given, false leaves it alone
        if not isinstance(value, bool):
            raise argparse.ArgumentTypeError("expected true or false")
        return value, action.const
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        return True, [_convert(action, item) for item in items]
    return True, _convert(action, value)


def config_defaults(
    parser: argparse.ArgumentParser, table: dict[str, object], source: Path, known: set[str]
) -> dict[str, object]:
    """The dest -> value the file sets for this command. A key no command has is an
    error; one that only other commands have is left to them."""
    actions = config_keys(parser)
    defaults: dict[str, object] = {}
    for key, value in table.items():
        action = actions.get(key)
        if action is None:
            if key in known:
                continue
            raise ConfigFileError(f"{source}: unknown key {key!r} (keys are long options)")
        try:
            sets, setting = _setting(action, value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            raise ConfigFileError(f"{source}: {key}: {exc}") from None
        if sets:
            defaults[action.dest] = setting
    return defaults


def _given_config(argv: list[str]) -> str | None:
    """--config FILE from the command line, before the real parse (abbreviations off, so
    --con cannot be taken for it)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    pre.add_argument("--config")
    try:
        found, _rest = pre.parse_known_args(argv)
    except argparse.ArgumentError:
        return None  # `--config` with no FILE: the real parse says so, in its one line
    return found.config


class OneLineErrors(argparse.ArgumentParser):
    """An ArgumentParser whose mistakes are one line and where to read more, not the whole
    usage block: a usage of twenty lines buries the one line that says what was wrong.
    Its subcommands are of this class too (argparse makes them of the parent's class)."""

    def __init__(self, *args: Any, help_command: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_command = help_command  # whose --help lists these options, if not prog's

    def error(self, message: str) -> NoReturn:
        # The message quotes what was typed: escaped, so it stays one line and inert.
        where = self.help_command or self.prog
        self.exit(2, f"{self.prog}: error: {printable(message)} (see {where} --help)\n")


def parse_command_line(
    parser: argparse.ArgumentParser, argv: list[str], cwd: Path | None = None
) -> argparse.Namespace:
    """Parse argv, the config file's values taken as the defaults of the command's options.

    An unknown option is reported with the usage of the command it was given to. Raises
    ConfigFileError (one line) for a config file that cannot be used."""
    commands = subcommands(parser)
    target = commands.get(argv[0]) if argv and commands else (None if commands else parser)
    appended: dict[str, int] = {}
    if target is not None:
        given = _given_config(argv)
        default = (cwd or Path.cwd()) / CONFIG_FILE
        path = Path(given) if given else (default if default.is_file() else None)
        if path is not None:
            known = {key for p in [parser, *commands.values()] for key in config_keys(p)}
            defaults = config_defaults(target, read_config_file(path), path, known)
            target.set_defaults(**defaults)
            appended = {k: len(v) for k, v in defaults.items() if isinstance(v, list)}
    args, extras = parser.parse_known_args(argv)
    if extras:
        (target or parser).error(f"unrecognized arguments: {' '.join(extras)}")
    for dest, count in appended.items():
        # The command line wins: options it repeats replace the file's list, not extend it.
        values = getattr(args, dest)
        if len(values) > count:
            setattr(args, dest, values[count:])
    return args


# ---- what viewers of --monitor may cost, and who may be one ------------------------------


def _origin(text: str) -> str:
    try:
        return origin_of(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_origin.__name__ = "origin"  # argparse names the type in its errors


def add_viewer_options(parser: argparse.ArgumentParser) -> None:
    viewers = parser.add_argument_group("viewers of --monitor")
    viewers.add_argument(
        "--max-viewers", type=whole_number(1, 65535), default=MAX_VIEWERS, metavar="N",
        help=f"connections the monitor holds at once (default %(default)s, and never more "
        f"than half the files the process may still open, so the crawl keeps its sockets); "
        f"one more is refused with 503, one that is not a WebSocket within "
        f"{HANDSHAKE_SECONDS:g} s is closed, and a viewer with more than "
        f"{human_bytes(MAX_BEHIND_BYTES)} waiting for it (all viewers together: "
        f"{human_bytes(TOTAL_BEHIND_BYTES)}), or behind for over {MAX_BEHIND_SECONDS:g} s, "
        f"is dropped",
    )  # fmt: skip
    viewers.add_argument(
        "--allow-origin", action="append", type=_origin, default=[], metavar="ORIGIN",
        help="let web pages from ORIGIN (http://host:port) watch; a page from any other "
        "origin but the monitor's own, or Origin null, gets 403 (programs such as "
        "`crawlscope attach` send none and may watch); repeatable",
    )  # fmt: skip


def viewer_limits(args: argparse.Namespace) -> ViewerLimits:
    return ViewerLimits(max_viewers=args.max_viewers, allow_origins=frozenset(args.allow_origin))
