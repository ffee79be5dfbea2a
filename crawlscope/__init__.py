"""crawlscope: an asyncio web crawler you can watch think.

The code lives in crawlscope.engine (the folder engine/), crawlscope.tui (tui/) and the
command line, crawlscope.cli (here, in cli/). `python -m crawlscope` is the `crawlscope`
command.
"""

from pkgutil import extend_path

# Run from a source tree over a wheel (`pip install .`, then python -m in the tree), this
# folder shadows the installed package: extend_path adds the installed one's subpackages.
__path__ = extend_path(__path__, __name__)
