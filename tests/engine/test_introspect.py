"""suspension_point() on real tasks, suspended in the places a crawler's workers sit."""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Awaitable, Generator
from typing import Any

import pytest

from crawlscope.engine.observe.introspect import SuspensionPoint, suspension_point


async def started(coro: Awaitable[Any], name: str = "t") -> asyncio.Task[Any]:
    task = asyncio.ensure_future(coro)
    task.set_name(name)
    for _ in range(3):  # a few loop turns: the task runs up to its first real suspension
        await asyncio.sleep(0)
    return task


@pytest.fixture
async def tasks() -> AsyncIterator[list[asyncio.Task[Any]]]:
    made: list[asyncio.Task[Any]] = []
    yield made
    for task in made:
        task.cancel()
    await asyncio.gather(*made, return_exceptions=True)


async def test_a_worker_waiting_on_queue_get(tasks: list[asyncio.Task[Any]]) -> None:
    q: asyncio.Queue[int] = asyncio.Queue()

    async def worker() -> None:
        await q.get()

    tasks.append(await started(worker()))
    point = suspension_point(tasks[0])
    assert point.state == "suspended"
    assert [f.function for f in point.frames] == [
        "test_a_worker_waiting_on_queue_get.<locals>.worker",
        "Queue.get",
    ]
    assert point.innermost is not None and point.innermost.file == "queues.py"
    assert point.awaits == "Future pending"
    assert str(point).startswith("Queue.get queues.py:")


async def test_event_wait(tasks: list[asyncio.Task[Any]]) -> None:
    event = asyncio.Event()
    tasks.append(await started(event.wait()))
    point = suspension_point(tasks[0])
    assert str(point).startswith("Event.wait locks.py:")
    assert point.awaits == "Future pending"


async def test_sleep(tasks: list[asyncio.Task[Any]]) -> None:
    tasks.append(await started(asyncio.sleep(30)))
    point = suspension_point(tasks[0])
    assert point.innermost is not None
    assert (point.innermost.function, point.innermost.file) == ("sleep", "tasks.py")
    assert point.awaits == "Future pending"


async def test_awaiting_another_task_names_it(tasks: list[asyncio.Task[Any]]) -> None:
    other = await started(asyncio.sleep(30), name="sleeper")
    tasks.append(other)

    async def waiter() -> None:
        await other

    tasks.append(await started(waiter()))
    assert suspension_point(tasks[1]).awaits == "Task sleeper pending"


async def test_through_an_await_wrapper_and_an_async_generator(
    tasks: list[asyncio.Task[Any]],
) -> None:
    """`await obj` where obj.__await__ hands back a coroutine's wrapper (as aiohttp's
    context managers do), and `async for` over an async generator: both walked through."""
    event = asyncio.Event()

    class Awaitable_:
        def __await__(self) -> Generator[Any, None, bool]:
            return event.wait().__await__()

    async def via_wrapper() -> None:
        await Awaitable_()

    async def ticks() -> AsyncIterator[int]:
        yield 1
        await event.wait()
        yield 2

    async def via_async_for() -> None:
        async for _ in ticks():
            pass

    tasks.append(await started(via_wrapper()))
    tasks.append(await started(via_async_for()))
    for task in tasks:
        point = suspension_point(task)
        assert point.innermost is not None and point.innermost.function == "Event.wait", point
        assert point.awaits == "Future pending"


async def test_a_generator_based_coroutine(tasks: list[asyncio.Task[Any]]) -> None:
    event = asyncio.Event()

    @types.coroutine
    def old_style() -> Generator[Any, None, None]:
        yield from event.wait().__await__()

    async def caller() -> None:
        await old_style()

    tasks.append(await started(caller()))
    functions = [f.function for f in suspension_point(tasks[0]).frames]
    assert functions[-2:] == ["test_a_generator_based_coroutine.<locals>.old_style", "Event.wait"]


async def test_done_cancelled_running_and_no_task() -> None:
    done = await started(asyncio.sleep(0))
    await done
    assert suspension_point(done).state == "done"

    cancelled = await started(asyncio.sleep(30))
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    assert str(suspension_point(cancelled)) == "cancelled"

    current = asyncio.current_task()
    assert current is not None
    assert suspension_point(current).state == "running"
    assert suspension_point(None) == SuspensionPoint("no task")


async def test_a_failed_task_is_not_marked_retrieved(tasks: list[asyncio.Task[Any]]) -> None:
    async def boom() -> None:
        raise RuntimeError("x")

    task = await started(boom())
    assert suspension_point(task).state == "done"
    # Looking must not have consumed the error: the owner still gets it.
    with pytest.raises(RuntimeError):
        await task


async def test_not_started_yet() -> None:
    async def later() -> None:
        await asyncio.sleep(30)

    task = asyncio.ensure_future(later())
    try:
        point = suspension_point(task)
        assert point.state == "not started"
        assert str(point) == "not started"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_never_raises_on_a_strange_task() -> None:
    class Odd:
        def done(self) -> bool:
            raise RuntimeError("nope")

    assert suspension_point(Odd()).state == "unknown"  # type: ignore[arg-type]
