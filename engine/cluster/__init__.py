"""One crawl over many processes: a frontier in Redis (redis_frontier.py), or on one
machine a frontier that survives a crash in SQLite (sqlite_state.py)."""
