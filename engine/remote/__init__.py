"""Watching a crawl from another process: a monitor serves its observation over a
WebSocket (monitor.py), and a client turns that back into an ObservedCrawl (client.py).
A lecture's stages go the same way (lecture_monitor.py, lecture_client.py)."""
