"""The TUI's widgets, one per module; each shows what the app hands it."""
