"""The screens of the main TUI: the panels they share, a live crawl, a replay."""
