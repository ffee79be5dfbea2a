"""The contract between a crawl and whoever watches it: what a screen, a recording, a monitor
or a cluster view may know. `contract` holds the protocols; `snapshot`, `workers` and
`worker_detail` the plain data they hand over; `introspect` reads where a task is suspended;
`text` makes crawled text safe to show. Nothing here reaches into the crawl's machinery."""
