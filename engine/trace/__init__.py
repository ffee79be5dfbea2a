"""A crawl's event trace: `recording` writes one JSON line per state change, fetch and
phase; `replay` reads it back as an observed crawl the TUI can play, seek and step."""
