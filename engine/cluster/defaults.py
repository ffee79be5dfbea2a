"""The cluster's defaults that `crawl --help` shows, in a module that imports no Redis."""

DEFAULT_LEASE = 30.0  # seconds a lease lasts unless renewed
DEFAULT_PATIENCE = 30.0  # seconds an unreachable Redis is waited for before the crawl stops
