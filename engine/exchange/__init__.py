"""What crosses the edge of the process: `plain` is the one gate for JSON from elsewhere,
`config_json` a config as JSON and back, `user_files` reads a file a user names (only a
regular file, only up to its cap), and `feeds` writes the records in the format a name asks."""
