"""Every redirect chain as a tree: source, each hop, and how it ended.

What it builds is capped, so that a redraw costs the same however many chains a crawl
has and however long they are: the first MAX_CHAINS chains, each cut to MAX_HOPS hops
(its first ones and its last), with counts for the rest; the report lists them all. The
engine keeps each chain's cut until a hop changes it (RedirectLog.preview), and only a
chain that changed is drawn again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from crawlscope.engine.redirects import Chain, ChainEnd

from ..format import crawled, short_url

# More chains than this are summed up in one line; the report lists them all.
MAX_CHAINS = 300
# Hops drawn per chain: a longer one shows its first MAX_HOPS - 1, a count, and its last.
MAX_HOPS = 20
# Beyond this many chains, new ones arrive folded so the tree stays scannable.
EXPAND_UP_TO = 30

_END: dict[ChainEnd, tuple[str, str]] = {
    ChainEnd.FETCHED: ("", "green"),
    ChainEnd.FAILED: ("✗ failed", "red"),
    ChainEnd.PENDING: ("… pending", "yellow"),
    ChainEnd.LOOP: ("↻ loop", "bold magenta"),
    ChainEnd.LIMIT: ("✂ max_redirect", "bold dark_orange"),
    ChainEnd.FILTERED: ("⊘ filtered", "dim"),
    ChainEnd.UNFETCHED: ("unfetched", "dim"),
    ChainEnd.MEETS: ("⋈ meets", "bold cyan"),
}


class ChainSource(Protocol):
    """A live crawl or a replay: what the tree asks of either."""

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]: ...


def end_text(chain: Chain) -> Text:
    word, style = _END[chain.end]
    if chain.end is ChainEnd.FETCHED:
        word = f"= {chain.status}"
        if chain.status is not None and chain.status >= 400:
            style = "red"
    return Text(word, style=style)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' if count != 1 else ''}"


class RedirectTree(Tree[str]):
    """Diffed by chain source: a chain whose hops or end changed is redrawn in place."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("redirect chains"), id=id)
        self.show_root = False
        self.guide_depth = 2
        self.origin = ""
        self._chain_nodes: dict[str, TreeNode[str]] = {}
        self._chains: dict[str, Chain] = {}
        self._more: TreeNode[str] | None = None

    def show_from(self, source: ChainSource) -> None:
        chains, total = source.chain_preview(MAX_CHAINS, MAX_HOPS)
        self.show(chains, total)

    def show(self, chains: Sequence[Chain], total: int | None = None) -> None:
        """Draw `chains` (the first of `total`, which defaults to all of them)."""
        if self._more is not None:  # taken off so that it stays below any chain added now
            self._more.remove()
            self._more = None
        shown = list(chains[:MAX_CHAINS])
        current = {chain.urls[0]: chain for chain in shown}
        for source in [s for s in self._chain_nodes if s not in current]:
            # Its start became a hop of a longer chain (x -> foo recorded after foo -> baz).
            self._chain_nodes.pop(source).remove()
            del self._chains[source]
        for chain in shown:
            source = chain.urls[0]
            if self._chains.get(source) == chain:
                continue
            node = self._chain_nodes.get(source)
            if node is None:
                node = self.root.add(self._label(chain), data=source)
                self._chain_nodes[source] = node
                if len(self._chain_nodes) <= EXPAND_UP_TO:
                    node.expand()
            else:
                node.set_label(self._label(chain))
                node.remove_children()
            self._chains[source] = chain
            self._add_hops(node, chain)
        self._show_rest((len(chains) if total is None else total) - len(shown))

    def _label(self, chain: Chain) -> Text:
        # Most telling first, as a narrow panel cuts the end off: source, how it ended.
        label = crawled(short_url(chain.urls[0], self.origin))
        label.append("  ").append_text(end_text(chain))
        if chain.meets and chain.end is not ChainEnd.MEETS:
            label.append("  ⋈ meets", "bold cyan")
        label.append(f"  ({_plural(chain.hops, 'hop')})", "dim")
        return label

    def _add_hops(self, node: TreeNode[str], chain: Chain) -> None:
        last = len(chain.urls) - 1
        for i, url in enumerate(chain.urls[1:], start=1):
            if i == last and chain.hidden:
                node.add_leaf(Text(f"… {_plural(chain.hidden, 'more hop')}", "dim italic"))
            hop = Text("→ ", "dim").append_text(crawled(short_url(url, self.origin)))
            if i == last:
                hop.append("  ").append_text(end_text(chain))
            node.add_leaf(hop, data=url)

    def _show_rest(self, rest: int) -> None:
        if rest > 0:
            label = Text(f"… {rest:,} more chains (all are in the report)", "dim italic")
            self._more = self.root.add_leaf(label)
