"""What a lecture engine's loop just did, told in the chapter's terms.

The engines describe each callback they are about to run in one terse line (their
`on_step` hook); these functions turn that line into a sentence or two a class can
read. They are pure string work, so they are tested on their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Step:
    """One loop callback, understood: who resumed, and the sentence that explains it."""

    raw: str  # the engine's own description
    task: str | None  # the task (stage 2) or URL (stage 1) it concerns, if named
    sentence: str


_SOCKET = re.compile(r"socket (\d+) (readable|writable): (\S+)(?: \[(.*)\])?$")
_RESOLVED = re.compile(r"'(.*)' resolved -> (\S+)(?: \[(.*)\])?$")
_TIMER = re.compile(r"timer fired: (\S+)(?: \[(.*)\])?$")
_SCHEDULED = re.compile(r"scheduled: (\S+)(?: \[(.*)\])?$")
_JUMPED = re.compile(r"clock jumped (\S+) s: (.*)$", re.DOTALL)
_SLEEP = re.compile(r"sleep (\S+)s(?:: backoff of (\S+))?$")


def narrate(description: str, short: str = "") -> Step:
    """`short` replaces the site's origin in URLs, to keep sentences readable."""

    def url(text: str | None) -> str:
        return (text or "").replace(short, "") if short else text or ""

    if m := _JUMPED.match(description):
        seconds, rest = m.groups()
        then = narrate(rest, short)
        return Step(description, then.task, f"{_jumped(seconds)} {then.sentence}")
    if m := _SOCKET.match(description):
        fd, ready, callback, about = m.groups()
        return Step(description, about, _socket(fd, ready, callback, url(about)))
    if m := _RESOLVED.match(description):
        future, callback, task = m.groups()
        return Step(description, task, _resolved(url(future), callback, task))
    if m := _TIMER.match(description):
        callback, about = m.groups()
        if callback == "Future.set_result" and (slept := _SLEEP.match(about or "")):
            seconds, worker = slept.groups()
            return Step(description, worker or about, _slept(seconds, worker))
        return Step(description, about, _timer(callback, url(about)))
    if m := _SCHEDULED.match(description):
        callback, task = m.groups()
        if callback == "Task.step" and task:
            sentence = (
                f"{task} takes a step the Task scheduled with call_soon(): step() calls "
                "send() on its generator, which runs to its first (or next) yield of a Future."
            )
        else:
            sentence = f"The loop runs {callback}, which was put on its ready queue."
        return Step(description, task, sentence)
    return Step(description, None, f"The loop runs a callback: {description}.")


def _socket(fd: str, ready: str, callback: str, about: str) -> str:
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


def _jumped(seconds: str) -> str:
    return (
        "Nothing is ready and no socket is watched, so select() could only sleep until "
        f"a timer is due: instead, the clock jumps {seconds} s to the next timer."
    )


def _slept(seconds: str, worker: str | None) -> str:
    if worker is None:
        return (
            f"A sleep({seconds}) timer ran out: it resolves the Future that the sleeping "
            "coroutine waits on, which resumes in a later step."
        )
    return (
        f"The backoff of {worker} is over (sleep {seconds}s after a failed try): the timer "
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
