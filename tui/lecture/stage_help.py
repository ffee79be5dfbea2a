"""The `?` screen of stages 1 and 2: their keys, and what each panel shows."""

from __future__ import annotations

STAGE_HELP = """\
# The lecture's stages 1 and 2

**Stage 1** runs the chapter's first crawler: one selector loop, a callback registered
for each socket, and a `Fetcher` object holding what a fetch needs between callbacks.
**Stage 2** runs its coroutines: generators that `yield` a Future when they must wait,
a `Task` that drives each with `send()`, and the queue they share. Both run on a loop
of crawlscope's own, stepped one callback at a time, crawling the built-in demo site.

The **left panel** shows the loop's insides (stage 1: the sockets watched, the timers,
the ready queue, the fetch slots) or each task's yield-from chain, the chapter's figure
5.3 (stage 2). The **code** beside it is the stage's module as shipped with this
version, with a cursor on the line where each task's own code is suspended (stage 2) or
on the callback about to run and each registered callback, with the line that handed it
to the loop (stage 1). **The queue's insides** and **what just happened** (each step, in
the chapter's words) are on the right.

| key | action |
|---|---|
| `n` | run one step (one callback of the loop) |
| `←` | one step back (500 are kept); from a stage's first step, the stage before |
| `p`, `space` | run on by itself, or freeze |
| `]` / `[` | run faster / slower |
| `t` | a traceback from the parser: ripped by callbacks (stage 1), whole (stage 2) |
| `l` | the timeline of steps: which fetch or task ran at each |
| `c` | show or fold away the code (folded on a terminal under 140 columns) |
| `↓` / `↑` | the next or previous task: the code centres on its line |
| `y` | a cursor on every frame of each task's yield-from chain, not only its own |
| `o` | the bytecode offsets (`f_lasti`) in the chains |
| `→` | the next stage |
| `q` | quit |

Press `escape`, `?` or `q` to close this screen.
"""
