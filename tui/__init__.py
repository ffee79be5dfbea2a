"""The Textual app: what it opens on, its screens and widgets (the command line that
starts it is crawlscope.cli)."""
