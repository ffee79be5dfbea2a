"""The demo site's shape, apart from its server, so a command line can show the defaults
without loading aiohttp."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DemoConfig:
    """Shape of the demo site. Equal configs always produce the same site."""

    pages: int = 60  # number of /page/N pages (N = 0..pages-1)
    links_per_page: int = 6
    latency: float = 0.0  # seconds added before each response
    jitter: float = 0.0  # extra uniform random 0..jitter seconds per response (seeded RNG)
    error_rate: float = 0.0  # fraction of /page/N pages answering 500 (never page 0)
    seed: int = 1
    flaky_failures: int = 2  # how many times /flaky drops the connection before it answers
    hostile: bool = False  # also serve engine/hostile_site.py's cases under /hostile/

    def __post_init__(self) -> None:
        # Fail at construction, where the bad value is visible, rather than with an
        # obscure error from the graph builder or a negative sleep later.
        if self.pages < 1:
            raise ValueError(f"pages must be at least 1, not {self.pages}")
        if self.links_per_page < 0:
            raise ValueError(f"links_per_page must be >= 0, not {self.links_per_page}")
        if self.latency < 0 or self.jitter < 0:
            raise ValueError("latency and jitter must be >= 0")
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"error_rate must be within [0, 1], not {self.error_rate}")
        if self.flaky_failures < 0:
            raise ValueError(f"flaky_failures must be >= 0, not {self.flaky_failures}")


# The demo site when the TUI opens on it: slow enough that a person sees states change,
# big enough that the crawl lasts a while.
DEMO_FOR_THE_EYE = DemoConfig(pages=1000, latency=0.1, jitter=0.2)
# The lecture's: small and quick, so a class sees a whole crawl in minutes of stepping.
LECTURE_DEMO = DemoConfig(pages=30, links_per_page=4, latency=0.02)
