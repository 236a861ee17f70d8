"""The asyncio API: the same names, awaited."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import raftlock
import raftlock.asyncio
from conftest import Cluster


@pytest.fixture
def name() -> str:
    return f"py/aio/{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def aother(cluster: Cluster):  # type: ignore[no-untyped-def]
    c = raftlock.asyncio.Client(cluster.endpoints, session_ttl=3, token=cluster.admin_token)
    yield c
    await c.close()


async def test_async_with_excludes_reenters_and_fences(
    aclient: raftlock.asyncio.Client, aother: raftlock.asyncio.Client, name: str
) -> None:
    lock = aclient.lock(name)
    async with lock:
        fence = lock.fence
        async with lock:
            assert lock.fence == fence
        assert lock.held
        assert await lock.owned()
        assert await aclient.check(name, fence)
        assert not await aother.lock(name).acquire(blocking=False)
        with pytest.raises(raftlock.Timeout):
            async with aother.lock(name, timeout=0.2):
                pytest.fail("entered a held lock")
    assert not await lock.locked()
    async with aother.lock(name) as theirs:
        assert theirs.fence > fence


async def test_waiting_tasks_are_granted_in_order(
    aclient: raftlock.asyncio.Client, cluster: Cluster, name: str
) -> None:
    order: list[int] = []
    clients = [raftlock.asyncio.Client(cluster.endpoints, session_ttl=3) for _ in range(3)]

    async def wait(i: int) -> None:
        async with clients[i].lock(name, timeout=30):
            order.append(i)

    async with aclient.lock(name):
        tasks = []
        for i in range(3):
            tasks.append(asyncio.create_task(wait(i)))
            while len(((await aclient.describe(name)) or _none()).waiters) < i + 1:
                await asyncio.sleep(0.02)
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2]
    for c in clients:
        await c.close()


def _none() -> raftlock.LockInfo:
    class Empty:
        waiters: list[raftlock.Waiter] = []  # noqa: RUF012

    return Empty()  # type: ignore[return-value]


async def test_a_lost_lock_cancels_its_task_with_abort_on_loss(
    aclient: raftlock.asyncio.Client, aother: raftlock.asyncio.Client, name: str
) -> None:
    reasons: list[str] = []
    started = asyncio.Event()

    async def critical_section() -> None:
        async with aclient.lock(name, abort_on_loss=True, on_lost=reasons.append) as lock:
            started.set()
            await asyncio.sleep(60)
            pytest.fail(f"kept running after losing {lock.name}")

    task = asyncio.create_task(critical_section())
    await asyncio.wait_for(started.wait(), 15)
    assert await aother.force_release(name) == 1
    with pytest.raises(raftlock.LockLost):
        await asyncio.wait_for(task, 15)
    assert reasons
    assert "force-released" in reasons[0]


async def test_a_lost_event_without_abort(
    aclient: raftlock.asyncio.Client, aother: raftlock.asyncio.Client, name: str
) -> None:
    lock = aclient.lock(name)
    await lock.acquire()
    await aother.force_release(name)
    await asyncio.wait_for(lock.lost.wait(), 15)
    assert not lock.held
    assert not await lock.owned()
    fenced = raftlock.asyncio.Fenced(lock, [])
    with pytest.raises(raftlock.LockLost):
        await fenced.write(lambda res, fence: res.append(fence))
    with pytest.raises(raftlock.LockLost):
        await lock.release()


async def test_cancelling_a_waiting_acquire_leaves_the_queue(
    aclient: raftlock.asyncio.Client, aother: raftlock.asyncio.Client, name: str
) -> None:
    async with aclient.lock(name):
        waiting = asyncio.create_task(aother.lock(name).acquire())
        while not ((await aclient.describe(name)) or _none()).waiters:
            await asyncio.sleep(0.02)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(100):
            info = await aclient.describe(name)
            if info is not None and not info.waiters:
                break
            await asyncio.sleep(0.05)
        assert info is not None
        assert not info.waiters, "the cancelled waiter left the queue"


async def test_semaphore_election_task_lock_and_leader_election(
    aclient: raftlock.asyncio.Client, aother: raftlock.asyncio.Client, name: str
) -> None:
    async with aclient.semaphore(name + "/s", 1):
        assert not await aother.semaphore(name + "/s", 1).acquire(blocking=False)
    async with aclient.rwlock(name + "/rw").read(), aother.rwlock(name + "/rw").read():
        pass

    ran: list[str] = []

    async def job(who: str) -> None:
        ran.append(who)

    results = await asyncio.gather(
        aclient.task_lock(name + "/t", 0.5, 10).run(job, "a"),
        aother.task_lock(name + "/t", 0.5, 10).run(job, "b"),
    )
    assert sorted(results) == [False, True]
    assert len(ran) == 1

    election = aclient.election(name + "/e")
    seen: list[bytes | None] = []

    async def watch() -> None:
        async for leader in aother.election(name + "/e").observe():
            seen.append(None if leader is None else leader.value)
            if len(seen) == 3:
                return

    watcher = asyncio.create_task(watch())
    while not seen:
        await asyncio.sleep(0.02)
    async with await election.campaign(b"a") as leadership:
        assert leadership.is_leader
        info = await election.leader()
        assert info is not None
        assert info.value == b"a"
    await asyncio.wait_for(watcher, 15)
    assert seen == [None, b"a", None]

    first = aclient.leader_election(name + "/le", "a")
    second = aother.leader_election(name + "/le", "b")
    async with first:
        assert await first.wait_for_leader(15)
        second.start()
        await asyncio.sleep(0.5)
        assert not second.is_leader
    assert await second.wait_for_leader(15)
    await second.stop()
