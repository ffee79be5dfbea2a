"""`python -m crawlscope.tui`: the `crawlscope` command, as before the command line moved
to crawlscope.cli (tests, benchmarks and `serve`'s browser tabs start it this way)."""

import sys

from crawlscope.cli import main

sys.exit(main())
