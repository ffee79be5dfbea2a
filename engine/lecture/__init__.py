"""The chapter's first two stages, runnable: a crawl on callbacks and a selector loop
(`stage_callbacks`), and one on generator coroutines with a Future, Task and loop built from
scratch (`stage_generators`), both speaking HTTP/1.1 by hand (`rawhttp`). `stages` picks one by
name, asyncio included. The lecture screens step them one loop callback at a time."""
