"""The two watched screens (a monitor's, attach.py; a cluster's, cluster_view.py) share
one base (watched_base.py): the keys, the bar above the footer, the read-only key. Each
keeps only what differs, so a change to what they share is made once.

Their behaviour is shown over real monitors and a real Redis in test_attach.py,
test_cluster_view.py and test_cluster_panel.py."""

from __future__ import annotations

import pytest

from crawlscope.tui.attach import WatchedScreen
from crawlscope.tui.cluster_view import ClusterScreen
from crawlscope.tui.watched_base import READ_ONLY, WatchedBase

SHARED = ("KEYS", "BINDINGS", "compose_bar", "action_read_only")


@pytest.mark.parametrize("screen", [WatchedScreen, ClusterScreen], ids=lambda s: s.__name__)
def test_each_watched_screen_keeps_only_what_differs(screen: type[WatchedBase]) -> None:
    assert issubclass(screen, WatchedBase)
    assert not [name for name in SHARED if name in vars(screen)]
    assert READ_ONLY in screen.KEYS
    # What differs: the bar's words and whether the view is read-only.
    assert {"show_bar", "read_only"} <= set(vars(screen))
