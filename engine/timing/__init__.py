"""Why a crawl is slow: `per_worker` (each worker's steps, scheduling delay and time in each
state), `loop_health` (how late the loop runs, and who held it), `collector` (the garbage
collector's pace), `turns` (the parse's turns at the loop) and `slowmo` (slow motion, held
inside the real awaits). The crawler uses them; none of them knows the crawler."""
