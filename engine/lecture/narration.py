"""What a lecture engine's loop just did, told in the chapter's terms.

The engines hand each callback they are about to run to their `on_step` hook as a step
event (steps.py); these functions turn one into a sentence or two a class can read, when
the stage is sampled (live.py), so a recording or a viewer carries the sentence itself.
They are pure functions of the event's fields, so they are tested on their own.
"""

from __future__ import annotations

from .snapshot import Told
from .steps import (
    ClockJumped,
    FutureResolved,
    Scheduled,
    SleepEnded,
    SocketReady,
    Step,
    TimerFired,
)


def narrate(step: Step, short: str = "") -> Told:
    """`short` replaces the site's origin in URLs, to keep sentences readable."""
    return Told(str(step), _concerns(step), _sentence(step, short))


def _concerns(step: Step) -> str | None:
    if isinstance(step, ClockJumped):
        return _concerns(step.then)
    if isinstance(step, SleepEnded):
        return step.backoff_of or step.about
    return step.about


def _sentence(step: Step, short: str) -> str:
    def url(text: str | None) -> str:
        return (text or "").replace(short, "") if short else text or ""

    if isinstance(step, ClockJumped):
        return f"{_jumped(step.seconds)} {_sentence(step.then, short)}"
    if isinstance(step, SocketReady):
        ready = "readable" if step.readable else "writable"
        return _socket(step.fd, ready, step.callback, url(step.about))
    if isinstance(step, FutureResolved):
        return _resolved(url(step.future), step.callback, step.about)
    if isinstance(step, SleepEnded):
        return _slept(step.seconds, step.backoff_of)
    if isinstance(step, TimerFired):
        return _timer(step.callback, url(step.about))
    return _scheduled(step)


def _scheduled(step: Scheduled) -> str:
    if step.callback == "Task.step" and step.about:
        return (
            f"{step.about} takes a step the Task scheduled with call_soon(): step() calls "
            "send() on its generator, which runs to its first (or next) yield of a Future."
        )
    return f"The loop runs {step.callback}, which was put on its ready queue."


def _socket(fd: int, ready: str, callback: str, about: str) -> str:
    if callback == "Fetcher.connected":
        return (
            f"select() reports socket {fd} writable: the connection for {about} is up. "
            "The loop calls the Fetcher's connected() callback, which sends the GET and "
            "registers read_response() for when the answer arrives."
        )
    if callback == "Fetcher.read_response":
        return (
            f"select() reports socket {fd} readable: bytes of the answer for {about} arrived. "
            "read_response() recv()s a chunk; once the response is whole it parses the links "
            "and starts new fetches, else it waits for the next readable event."
        )
    if callback.startswith("writable."):
        return (
            f"select() reports socket {fd} writable (connected). The loop runs the little "
            "on_writable callback, which only resolves the Future the coroutine waits on; "
            "the coroutine itself resumes in a later step."
        )
    if callback.startswith("read."):
        return (
            f"select() reports socket {fd} readable. on_readable recv()s a chunk and resolves "
            "the Future with it; the task suspended in read() resumes in a later step."
        )
    return f"select() reports socket {fd} {ready}; the loop calls {callback} for {about}."


def _resolved(future: str, callback: str, task: str | None) -> str:
    who = task or "a task"
    if callback == "Task._wakeup":
        if future == "queue get":
            return (
                f"A URL was put on the queue, resolving the Future {who} waited on in "
                "Queue.get(): _wakeup() resumes it with send(), it takes the URL and starts "
                "to fetch it."
            )
        if future == "queue join":
            return (
                "The unfinished counter reached 0, so task_done() resolved the join Future: "
                f"{who} resumes after `yield from q.join()` and cancels the workers."
            )
        if future.startswith("socket "):
            return (
                f"The Future '{future}' was resolved, so Task._wakeup() calls send() on "
                f"{who}'s generator: the value travels down the yield-from chain to the "
                "innermost coroutine, which runs to its next yield of a Future."
            )
        if future.startswith("robots "):
            return (
                f"The task fetching {future.removeprefix('robots ')}/robots.txt returned, "
                f"which resolved it (a Task is a Future): {who}, waiting on it, resumes."
            )
        return (
            f"The Future '{future}' was resolved, so Task._wakeup() resumes {who} "
            "where it yielded that Future."
        )
    return f"The Future '{future}' was resolved, and the loop runs its callback {callback}."


def _jumped(seconds: float) -> str:
    return (
        "Nothing is ready and no socket is watched, so select() could only sleep until "
        f"a timer is due: instead, the clock jumps {round(seconds, 2):g} s to the next timer."
    )


def _slept(seconds: float, worker: str | None) -> str:
    if worker is None:
        return (
            f"A sleep({seconds:g}) timer ran out: it resolves the Future that the sleeping "
            "coroutine waits on, which resumes in a later step."
        )
    return (
        f"The backoff of {worker} is over (sleep {seconds:g}s after a failed try): the timer "
        f"resolves the Future {worker} sleeps on, so in a later step it resumes and tries "
        "its URL again."
    )


def _timer(callback: str, about: str) -> str:
    if callback == "Fetcher.fetch":
        return f"A backoff timer ran out: the loop calls fetch() again to retry {about}."
    if callback in ("Fetcher.timed_out", "_expire"):
        return (
            f"A deadline passed: {about} took too long, so the loop gives up on this try "
            "(stage 2 throws TimeoutError into the task where it waits)."
        )
    return f"A timer fired: the loop calls {callback}{f' for {about}' if about else ''}."
