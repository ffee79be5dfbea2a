"""One record per fetch: the chapter's FetchStatistic, extended."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

FIELDS = (
    "url", "status", "next_url", "exception", "size", "content_type", "encoding",
    "num_urls", "num_new_urls", "tries", "depth", "referrer", "worker", "t_start", "t_end",
)  # fmt: skip


@dataclass(slots=True)
class FetchRecord:
    url: str
    status: int | None  # None when no response came
    next_url: str | None  # the redirect target, resolved and normalised
    exception: str | None  # "TypeName: message" when the fetch failed
    size: int
    content_type: str | None
    encoding: str | None
    num_urls: int  # links found on the page (after scoping)
    num_new_urls: int  # of those, the ones not seen before
    tries: int
    depth: int
    referrer: str | None
    worker: int
    t_start: float  # wall-clock seconds since the epoch
    t_end: float

    @property
    def failed(self) -> bool:
        return self.status is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        # ensure_ascii keeps the line valid whatever bytes a hostile page put in a URL.
        return json.dumps(self.to_dict(), ensure_ascii=True)


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


class JsonlWriter:
    """Writes each record as one JSON line the moment it is made, so memory stays flat and
    a crawl cut short still leaves every line it got to."""

    def __init__(self, path: str | Path) -> None:
        self._file: TextIO = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def __call__(self, record: FetchRecord) -> None:
        self._file.write(record.to_json() + "\n")

    def close(self) -> None:
        self._file.close()
