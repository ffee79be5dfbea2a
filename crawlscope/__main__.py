"""`python -m crawlscope`: the `crawlscope` command."""

import sys

from crawlscope.cli import main

sys.exit(main())
