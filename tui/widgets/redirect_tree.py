"""Every redirect chain as a tree: source, each hop, and how it ended."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from crawlscope.engine.redirects import Chain, ChainEnd

from ..format import crawled, short_url

# More chains than this are summed up in one line; the report lists them all.
MAX_CHAINS = 300
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
}


def end_text(chain: Chain) -> Text:
    word, style = _END[chain.end]
    if chain.end is ChainEnd.FETCHED:
        word = f"= {chain.status}"
        if chain.status is not None and chain.status >= 400:
            style = "red"
    return Text(word, style=style)


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

    def show(self, chains: Sequence[Chain]) -> None:
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
        self._show_rest(len(chains) - len(shown))

    def _label(self, chain: Chain) -> Text:
        # Most telling first, as a narrow panel cuts the end off: source, how it ended.
        label = crawled(short_url(chain.urls[0], self.origin))
        label.append("  ").append_text(end_text(chain))
        if chain.meets:
            label.append("  ⋈ meets", "bold cyan")
        hops = len(chain.urls) - 1
        label.append(f"  ({hops} hop{'s' if hops != 1 else ''})", "dim")
        return label

    def _add_hops(self, node: TreeNode[str], chain: Chain) -> None:
        last = len(chain.urls) - 1
        for i, url in enumerate(chain.urls[1:], start=1):
            hop = Text("→ ", "dim").append_text(crawled(short_url(url, self.origin)))
            if i == last:
                hop.append("  ").append_text(end_text(chain))
            node.add_leaf(hop, data=url)

    def _show_rest(self, rest: int) -> None:
        if rest > 0:
            label = Text(f"… {rest:,} more chains (all are in the report)", "dim italic")
            self._more = self.root.add_leaf(label)
