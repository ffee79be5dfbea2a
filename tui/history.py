"""The last minute of the crawl, one sample a second, for the queue panel's sparklines."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True, slots=True)
class Sample:
    t: float  # monotonic
    queued: int
    finished: int  # done + failed so far


class History:
    """Fed every frame; keeps at most one sample a second for `window` seconds."""

    def __init__(self, window: int = 60, rate_over: float = 5.0) -> None:
        self.window = window
        self.rate_over = rate_over  # seconds the pages/s figure averages over
        self._samples: deque[Sample] = deque(maxlen=window + 1)

    def feed(self, t: float, queued: int, finished: int) -> bool:
        """Take a sample if a second has passed since the last; True if one was taken."""
        if self._samples and t - self._samples[-1].t < 1.0:
            return False
        self._samples.append(Sample(t, queued, finished))
        return True

    def queue_sizes(self) -> list[float]:
        """One value a second, oldest first, padded with zeros to the full window so the
        sparkline's right edge is always now."""
        values = [float(s.queued) for s in list(self._samples)[-self.window :]]
        return [0.0] * (self.window - len(values)) + values

    def throughputs(self) -> list[float]:
        """Pages finished in each second of the window, oldest first, zero-padded."""
        samples = list(self._samples)
        values = [
            (b.finished - a.finished) / (b.t - a.t) for a, b in pairwise(samples) if b.t > a.t
        ]
        return [0.0] * (self.window - len(values)) + values

    def rate(self, t: float, finished: int) -> float:
        """Pages per second over the last `rate_over` seconds, up to time `t`."""
        base = None
        for sample in reversed(self._samples):
            base = sample
            if t - sample.t >= self.rate_over:
                break
        if base is None or t - base.t <= 0:
            return 0.0
        return (finished - base.finished) / (t - base.t)
