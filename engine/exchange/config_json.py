"""A CrawlConfig as plain JSON data, and back: what a monitor's hello, a cluster
process's publication and a recording's start line hold. The way back is checked as
everything from another process is (engine/exchange/plain.py), then by CrawlConfig itself."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..config import CrawlConfig
from ..observe.text import printable
from .plain import BadMessage, FieldsOf, decode


def config_to_plain(config: CrawlConfig) -> dict[str, Any]:
    plain = dataclasses.asdict(config)
    plain.pop("compiled_exclude", None)  # rebuilt from `exclude` on the other side
    return plain


def config_from_plain(plain: object, where: str = "config") -> CrawlConfig:
    """The config another process sent or a recording holds; BadMessage if it is not one."""
    fields = decode(FieldsOf(CrawlConfig), plain, where)
    try:
        return CrawlConfig(**fields)
    except ValueError as exc:  # ConfigError: a value the crawler itself would refuse
        raise BadMessage(f"{where}: {printable(str(exc), 120)}") from None
