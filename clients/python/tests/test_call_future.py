"""What an awaited call answers (the native ``CallFuture``) is an asyncio
future to every asyncio API, and the task it wakes runs in the same pass
of the loop that learns the call ended."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from typing import Any

import pytest
import raftlock
import raftlock.asyncio
from conftest import Cluster
from raftlock.errors import NotHeld

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def native_call(client: raftlock.asyncio.Client, name: str = "cf/free") -> Any:
    """A raw awaited call: ``describe`` of a lock nobody holds."""
    return client._native.describe(name, aio=True)


async def test_it_is_a_future_to_asyncio(aclient: raftlock.asyncio.Client) -> None:
    """isfuture, ensure_future, get_loop, done/result, gather, wait,
    wait_for and shield all take it, as they take an asyncio.Future."""
    call = native_call(aclient)
    assert asyncio.isfuture(call)
    assert asyncio.ensure_future(call) is call
    assert call.get_loop() is asyncio.get_running_loop()
    assert not call.done()
    with pytest.raises(asyncio.InvalidStateError):
        call.result()
    assert await call is None
    assert call.done()
    assert not call.cancelled()
    assert call.result() is None
    assert call.exception() is None
    assert await asyncio.gather(native_call(aclient), native_call(aclient)) == [None, None]
    done, pending = await asyncio.wait([native_call(aclient)])
    assert len(done) == 1
    assert not pending
    assert await asyncio.wait_for(native_call(aclient), 60) is None
    assert await asyncio.shield(native_call(aclient)) is None


async def test_an_error_is_raised_by_await_and_result(aclient: raftlock.asyncio.Client) -> None:
    lock = aclient.lock("cf/error")
    await lock.acquire()
    guard = lock._pop()
    await guard.release(aio=True)
    call = guard.release(aio=True)  # released already: NotHeld
    with pytest.raises(NotHeld):
        await call
    assert isinstance(call.exception(), NotHeld)
    with pytest.raises(NotHeld):
        call.result()


async def test_cancel_and_done_callbacks(aclient: raftlock.asyncio.Client) -> None:
    """cancel() cancels once and schedules the callbacks; a callback added
    to a done future is scheduled; remove_done_callback counts removals."""
    seen: list[str] = []
    call = native_call(aclient)
    call.add_done_callback(lambda f: seen.append("first"))

    def second(f: Any) -> None:
        seen.append("second")

    call.add_done_callback(second)
    call.add_done_callback(second)
    assert call.remove_done_callback(second) == 2
    assert call.cancel("stop")
    assert not call.cancel()
    assert call.cancelled()
    assert call.done()
    assert seen == []  # scheduled, not run inside cancel()
    await asyncio.sleep(0)
    assert seen == ["first"]
    with pytest.raises(asyncio.CancelledError, match="stop"):
        await call
    call.add_done_callback(lambda f: seen.append("late"))
    await asyncio.sleep(0)
    assert seen == ["first", "late"]


async def test_callbacks_run_in_their_context(aclient: raftlock.asyncio.Client) -> None:
    """A task's variables are its own after the await, and a callback
    added outside a task sees the context it was added in. Run without
    their contexts (called directly in the drain), the second task read
    the first one's value: ['a', 'a']."""

    async def task(value: str) -> str:
        VAR.set(value)
        await native_call(aclient)
        return VAR.get()

    assert await asyncio.gather(task("a"), task("b")) == ["a", "b"]
    seen: list[str] = []
    call = native_call(aclient)
    VAR.set("at add")
    call.add_done_callback(lambda f: seen.append(VAR.get()))
    VAR.set("later")
    await call
    await asyncio.sleep(0)
    assert seen == ["at add"]


async def test_a_raising_callback_goes_to_the_loop_handler(
    aclient: raftlock.asyncio.Client,
) -> None:
    """The exception reaches the loop's handler; the calls that ended with
    it still wake their tasks. Written as unraisable instead, the handler
    saw nothing."""
    loop = asyncio.get_running_loop()
    handled: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: handled.append(context))
    try:
        calls = [native_call(aclient) for _ in range(5)]

        def boom(f: Any) -> None:
            raise ValueError("boom")

        calls[0].add_done_callback(boom)
        assert await asyncio.gather(*calls) == [None] * 5
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [type(c["exception"]) for c in handled] == [ValueError]


async def test_an_ended_call_resumes_its_task_in_the_same_pass(
    aclient: raftlock.asyncio.Client,
) -> None:
    """40 acquire/release pairs, one after the other, take at most 3 passes
    of the loop each: the pass that drains an ended call runs the task's
    next step, which makes the next call, started at the drain's end. With
    asyncio futures resolved by the drain and the calls started by a
    `flush` scheduled with call_soon, each call took 3 passes (drain, the
    task's step, flush): 6 or more per pair."""
    loop = asyncio.get_running_loop()
    run_once = loop._run_once  # type: ignore[attr-defined]
    counted = [0]

    def counting() -> None:
        counted[0] += 1
        run_once()

    lock = aclient.lock("cf/passes")
    await lock.acquire()  # connected, session granted
    await lock.release()
    pairs = 40
    loop._run_once = counting  # type: ignore[attr-defined]
    try:
        for _ in range(pairs):
            async with lock:
                pass
    finally:
        del loop._run_once  # type: ignore[attr-defined]
    assert counted[0] <= 3 * pairs, counted[0]


def test_an_exit_from_a_callback_propagates_and_the_rest_still_run(cluster: Cluster) -> None:
    """A done-callback raising `SystemExit` stops the loop as it would from
    a `call_soon` callback, and the future's other callbacks (here the
    gather's) still run: the gather then ends. Reporting every exception
    to the loop's handler instead lets `SystemExit` vanish
    (`pytest.raises` fails)."""
    loop = asyncio.new_event_loop()
    client = raftlock.asyncio.Client(cluster.endpoints)
    try:

        async def start() -> list[Any]:
            calls = [native_call(client) for _ in range(8)]

            def leave(f: Any) -> None:
                raise SystemExit("from a done-callback")

            calls[0].add_done_callback(leave)
            return calls

        gathered = asyncio.gather(*loop.run_until_complete(start()))
        with pytest.raises(SystemExit, match="from a done-callback"):
            loop.run_until_complete(gathered)
        assert loop.run_until_complete(asyncio.wait_for(gathered, 60)) == [None] * 8
    finally:
        loop.run_until_complete(client.close())
        loop.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_loop_closed_with_calls_in_flight_is_collected(cluster: Cluster) -> None:
    """A loop closed while an awaited call is in flight (an acquire queued
    behind another holder) is freed by the garbage collector, and with it
    its port and the port's socket pair, which only the loop holds. The
    loop holds its port, the port the
    call's future, and the future its loop: without `__traverse__` on
    `CallFuture` and `LoopPort` the collector cannot see that cycle, and
    each such loop stays in memory for ever (the weak reference below stays
    alive)."""
    holder = raftlock.Client(cluster.endpoints)
    with holder.lock("cf/in-flight"):
        loops = []
        for _ in range(3):
            loop = asyncio.new_event_loop()
            client = raftlock.asyncio.Client(cluster.endpoints)
            task = loop.create_task(client.lock("cf/in-flight").acquire())
            loop.run_until_complete(asyncio.sleep(0.3))
            assert not task.done()
            loops.append(weakref.ref(loop))
            loop.close()
            del loop, task, client
        gc.collect()
        assert [ref() for ref in loops] == [None, None, None]
    holder.close()
