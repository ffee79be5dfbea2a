"""crawlscope's benchmarks: run them all with `python -m bench [--quick]`."""
