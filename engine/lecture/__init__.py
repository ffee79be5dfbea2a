"""The chapter's first two stages, runnable: a crawl on callbacks and a selector loop
(`stage_callbacks`), and one on generator coroutines with a Future, Task and loop built from
scratch (`stage_generators`), both speaking HTTP/1.1 by hand (`rawhttp`). `stages` picks one by
name, asyncio included. The lecture screens step them one loop callback at a time, and see
them only through a contract: `observe` (the protocols) and `snapshot` (a step as plain
data), sampled by `live` with each step told in the chapter's terms (`narration`);
`recording` and `replay` keep a lecture's steps in a file and play them back."""
