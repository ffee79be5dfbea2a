"""`python -m crawlscope`: the `crawlscope` command."""

import sys

from crawlscope.tui.cli import main

sys.exit(main())
