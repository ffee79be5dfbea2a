"""The small pure pieces of the TUI: formatting, the minute of history, join()'s line."""

from __future__ import annotations

import pytest

from crawlscope.engine.observe.snapshot import Accounting, Phase
from crawlscope.tui.format import clock, duration, short_url, size
from crawlscope.tui.history import History
from crawlscope.tui.widgets.queue_panel import QueueView, why_join_waits


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.004, "0.00s"), (0.25, "0.25s"), (0.999, "1.0s"), (3.14, "3.1s"), (9.97, "10s"),
     (42.4, "42s"), (59.6, "1m00s"), (307, "5m07s"), (3599.9, "1h00m"), (7500, "2h05m")],
)  # fmt: skip
def test_duration_is_short_and_rounds_across_units(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_clock_size_and_short_url() -> None:
    assert clock(62.34) == "1:02.3" and clock(3725) == "1:02:05"
    assert (size(999), size(1500), size(2_500_000)) == ("999B", "1.5k", "2.5M")
    origin = "http://127.0.0.1:8000"
    assert short_url("http://127.0.0.1:8000/a/b", origin) == "/a/b"
    assert short_url("http://127.0.0.1:8000", origin) == "/"
    # Only the very origin is cut: a longer port or another host stays whole.
    assert short_url("http://127.0.0.1:80001/x", origin) == "http://127.0.0.1:80001/x"
    assert short_url("http://example.com/x", origin) == "http://example.com/x"


def test_history_keeps_a_minute_at_one_sample_a_second() -> None:
    history = History(window=60, rate_over=5)
    taken = [history.feed(t / 10, queued=t, finished=t * 2) for t in range(0, 1000)]
    assert sum(taken) == 100  # one in ten frames
    sizes = history.queue_sizes()
    assert len(sizes) == 60 and sizes[-1] == 990.0
    assert history.throughputs()[-1] == pytest.approx(20.0)
    assert history.rate(t=99.9, finished=1998) == pytest.approx(20.0, rel=0.05)
    assert History().queue_sizes() == [0.0] * 60  # nothing yet: a flat line, not an error


def view(phase: Phase, queued: int = 0, held: int = 0, live: int = 4, paused: int = 0) -> QueueView:
    a = Accounting(seen=queued + held, done=0, failed=0, filtered=0, queued=queued, held=held,
                   unfetched=0)  # fmt: skip
    return QueueView(phase, a, queued + held, live, paused, None, False)


@pytest.mark.parametrize(
    ("v", "says"),
    [
        (view(Phase.IDLE), "not started"),
        (view(Phase.RUNNING, queued=5, held=2), "2 in flight, 5 queued"),
        (view(Phase.RUNNING, held=3), "3 in flight, none queued"),
        (view(Phase.RUNNING, queued=7, live=0), "no worker"),
        (view(Phase.RUNNING, queued=7, paused=4), "every worker paused"),
        (view(Phase.PAUSED, queued=7, held=1), "paused, 7 queued, 1 held"),
        (view(Phase.FINISHED), "join() returned"),
        (view(Phase.STOPPED, queued=9), "stop() came first; 9 URLs"),
    ],
)
def test_one_line_says_why_join_still_waits(v: QueueView, says: str) -> None:
    assert says in why_join_waits(v)
