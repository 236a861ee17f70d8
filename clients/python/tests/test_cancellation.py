"""A cancelled or interrupted acquire never leaves a hold, and never costs
the client its session: randomized trials cancel acquires at every point
of the call (``asyncio.wait_for`` with tiny timeouts, ``task.cancel()``,
``KeyboardInterrupt`` during a blocking acquire), on free and on busy
locks, directly and through a proxy that delays every byte; then a fresh
client finds no hold left, and later calls on the cancelled client work.

``RAFTLOCK_CANCEL_TRIALS`` sets the asyncio trials per run (default 100;
the blocking ones are a third of it); ``RAFTLOCK_CANCEL_SEED`` replays a
run (the seed is printed).

Without the client's cleanup of abandoned calls, grants that arrive after
the caller gave up stay held on the session lease ("holds left"), and a
client whose first calls were all cancelled is refused as "not known but
has had replies" (``OutcomeUnknown``) on its next call.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import os
import random
import statistics
import threading
import time
import uuid
from collections.abc import Awaitable

import pytest
import raftlock
import raftlock.asyncio
from conftest import Cluster

TRIALS = int(os.environ.get("RAFTLOCK_CANCEL_TRIALS", "100"))


def seeded() -> random.Random:
    seed = int(os.environ.get("RAFTLOCK_CANCEL_SEED") or random.randrange(1 << 62))
    print(f"RAFTLOCK_CANCEL_SEED={seed}")
    return random.Random(seed)


class DelayProxy:
    """A TCP proxy that delays every chunk by ``latency`` seconds each way
    (order kept), run on the test's event loop."""

    def __init__(self, target: str, latency: float) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.latency = latency
        self.server: asyncio.Server | None = None
        self.addr = ""

    async def start(self) -> DelayProxy:
        self.server = await asyncio.start_server(self.link, "127.0.0.1", 0)
        host, port = self.server.sockets[0].getsockname()[:2]
        self.addr = f"{host}:{port}"
        return self

    async def link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self.pipe(reader, up_writer), self.pipe(up_reader, writer), return_exceptions=True
        )

    async def pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    break
                await asyncio.sleep(max(0.0, due - loop.time()))
                writer.write(chunk)
                await writer.drain()
            writer.close()

        sender = asyncio.create_task(send())
        try:
            while chunk := await reader.read(16384):
                queue.put_nowait((loop.time() + self.latency, chunk))
        finally:
            queue.put_nowait((0.0, b""))
            await sender

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 1)


async def holds_left(cluster: Cluster, prefix: str) -> list[str]:
    """What a fresh client sees held or waited for under ``prefix``, once
    cleanups still on their way had up to 30 s."""
    async with raftlock.asyncio.Client(cluster.endpoints) as fresh:
        deadline = time.monotonic() + 30
        while True:
            left = [f"{i.name} {i.holders}" for i in await fresh.list_locks(prefix)]
            if not left or time.monotonic() > deadline:
                return left
            await asyncio.sleep(0.1)


async def window(client: raftlock.asyncio.Client, prefix: str) -> float:
    """Twice the median time an acquire takes (seconds): cancel points
    drawn below it fall before, during and after every step of the call
    on this machine, however loaded."""
    took = []
    for i in range(7):
        lock = client.lock(f"{prefix}/calibrate-{i}")
        started = time.monotonic()
        await lock.acquire()
        took.append(time.monotonic() - started)
        await lock.release()
    return 2 * statistics.median(took)


async def aio_trials(
    client: raftlock.asyncio.Client,
    holder: raftlock.asyncio.Client,
    prefix: str,
    rng: random.Random,
) -> dict[str, int]:
    """``TRIALS`` acquires on ``client``, each cancelled at a random point
    (or not, when it is quick); some on locks ``holder`` frees at a random
    moment. Answers the tally; fails on any error but a timeout."""
    tally = {"cancelled": 0, "granted": 0, "not_granted": 0}
    limit = max(await window(client, prefix), 0.0001)
    print(f"{prefix}: cancel points in 0..{limit * 1000:.1f} ms")
    frees: list[asyncio.Task[None]] = []

    async def free_later(lock: raftlock.asyncio.Lock, after: float) -> None:
        await asyncio.sleep(after)
        await lock.release()

    for i in range(TRIALS):
        name = f"{prefix}/{i}"
        if rng.random() < 0.3:
            busy = holder.lock(name)
            assert await busy.acquire()
            frees.append(asyncio.create_task(free_later(busy, rng.uniform(0, limit))))
        lock = client.lock(name)
        call: Awaitable[bool] = lock.acquire(blocking=rng.random() < 0.8)
        after = rng.uniform(0, limit)
        try:
            if rng.random() < 0.5:
                got = await asyncio.wait_for(call, after)
            else:
                task = asyncio.ensure_future(call)
                await asyncio.sleep(after)
                task.cancel()
                got = await task
        except (asyncio.TimeoutError, asyncio.CancelledError):
            tally["cancelled"] += 1
            continue
        if got:
            tally["granted"] += 1
            await lock.release()
        else:
            tally["not_granted"] += 1
    await asyncio.gather(*frees)
    return tally


async def later_calls_work(client: raftlock.asyncio.Client, prefix: str) -> None:
    """Later calls on a client whose acquires were cancelled all work."""
    for i in range(3):
        async with client.lock(f"{prefix}/later-{i}"):
            pass
        await client.session_lease()


@pytest.fixture
def prefix() -> str:
    return f"py/cancel/{uuid.uuid4().hex[:12]}"


async def test_asyncio_cancelled_acquires_leave_no_hold(cluster: Cluster, prefix: str) -> None:
    """``wait_for`` with random short timeouts and ``task.cancel()`` at
    random points, directly and through delaying proxies: no hold left, and
    the client keeps working (no ``OutcomeUnknown``)."""
    rng = seeded()
    async with raftlock.asyncio.Client(cluster.endpoints) as holder:
        async with raftlock.asyncio.Client(cluster.endpoints) as direct:
            print("direct:", await aio_trials(direct, holder, f"{prefix}/direct", rng))
            await later_calls_work(direct, f"{prefix}/direct")
            assert await holds_left(cluster, prefix) == []
        latency = rng.uniform(0.001, 0.003)
        proxies = [await DelayProxy(e, latency).start() for e in cluster.endpoints]
        try:
            async with raftlock.asyncio.Client([p.addr for p in proxies]) as slow:
                tally = await aio_trials(slow, holder, f"{prefix}/delayed", rng)
                print(f"delayed by {latency * 1000:.1f} ms:", tally)
                await later_calls_work(slow, f"{prefix}/delayed")
                assert await holds_left(cluster, prefix) == []
        finally:
            for proxy in proxies:
                await proxy.stop()


async def test_a_client_whose_first_calls_were_cancelled_works(
    cluster: Cluster, prefix: str
) -> None:
    """The very first calls of a client, cancelled at once, many times: its
    later calls still work and nothing is left held."""
    async with raftlock.asyncio.Client(cluster.endpoints) as client:
        for i in range(20):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(client.lock(f"{prefix}/{i}").acquire(), 0.0005 * i)
        await later_calls_work(client, prefix)
        assert await holds_left(cluster, prefix) == []


def interrupted_trial(lock: raftlock.Lock, after: float) -> str:
    """One blocking acquire with a KeyboardInterrupt (``interrupt_main``,
    as Ctrl-C) ``after`` seconds in: during the call, or just after it.
    Leaves the lock object holding nothing. Answers how it went."""
    timer = threading.Timer(after, _thread.interrupt_main)
    outcome = "interrupted"
    try:
        try:
            # Inside the `try`: a short timer fires while `start` waits for
            # its thread.
            timer.start()
            assert lock.acquire()
            outcome = "granted"
        finally:
            timer.join()
        # The interrupt is raised at the latest here, within the `try`.
        time.sleep(0.001)
    except KeyboardInterrupt:
        pass
    # Granted before the interrupt: the object holds it (a second release,
    # or none held, says NotHeld).
    with contextlib.suppress(raftlock.NotHeld):
        lock.release()
    return outcome


def test_interrupted_blocking_acquires_leave_no_hold(cluster: Cluster, prefix: str) -> None:
    """KeyboardInterrupt at random points of blocking acquires (free locks,
    and locks another client frees a little later): no hold left, and the
    client keeps working."""
    rng = seeded()
    trials = max(TRIALS // 3, 10)
    with raftlock.Client(cluster.endpoints) as client, raftlock.Client(cluster.endpoints) as holder:
        took = []
        for i in range(5):
            started = time.monotonic()
            with client.lock(f"{prefix}/calibrate-{i}"):
                took.append(time.monotonic() - started)
        limit = 2 * statistics.median(took) + 0.1  # signals are looked at every 50 ms
        tally: dict[str, int] = {}
        frees = []
        for i in range(trials):
            name = f"{prefix}/{i}"
            if rng.random() < 0.5:
                busy = holder.lock(name)
                assert busy.acquire()
                free = threading.Timer(rng.uniform(0, limit), busy.release)
                free.start()
                frees.append(free)
            outcome = interrupted_trial(client.lock(name), rng.uniform(0, limit))
            tally[outcome] = tally.get(outcome, 0) + 1
        for free in frees:
            free.join()
        print(f"blocking: {trials} trials, {tally}")
        for i in range(3):
            with client.lock(f"{prefix}/later-{i}"):
                pass
        assert asyncio.run(holds_left(cluster, prefix)) == []
