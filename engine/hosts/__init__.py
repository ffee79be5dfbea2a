"""One crawl seen host by host: `figures` keeps a row per origin (queue, latency, robots.txt,
limit) as the crawl goes, and `controls` checks the hosts' controls (block, delay, limit) that
arrive from another process before the crawl acts on them."""
