"""raftlock.grelmicro.RaftlockSyncBackend keeps grelmicro's SyncBackend
contract (sync/abc.py), and grelmicro's Lock, TaskLock and LeaderElection
run on it unchanged."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import anyio
import pytest

pytest.importorskip("grelmicro.sync", reason="grelmicro 0.20 (Python 3.11)")

import raftlock.asyncio
from conftest import Cluster
from grelmicro.sync import LeaderElection, Lock, TaskLock
from raftlock.grelmicro import RaftlockSyncBackend


@pytest.fixture
async def backend(cluster: Cluster) -> AsyncIterator[RaftlockSyncBackend]:
    async with RaftlockSyncBackend(cluster.endpoints, prefix="grel/") as b:
        yield b


@pytest.fixture
def name() -> str:
    return "lock_" + uuid.uuid4().hex[:12]


async def test_the_sync_backend_contract(
    backend: RaftlockSyncBackend, cluster: Cluster, name: str
) -> None:
    async with RaftlockSyncBackend(cluster.endpoints, prefix="grel/") as elsewhere:
        assert not await backend.locked(name=name)
        assert await backend.acquire(name=name, token="a", duration=5)
        assert await backend.locked(name=name)
        assert await elsewhere.locked(name=name), "seen by another process"
        assert await backend.owned(name=name, token="a")
        assert not await backend.owned(name=name, token="b")
        # Another token is refused, from this process or another.
        assert not await backend.acquire(name=name, token="b", duration=5)
        assert not await elsewhere.acquire(name=name, token="b", duration=5)
        # Acquire again with the same token: extends, not re-enters.
        assert await backend.acquire(name=name, token="a", duration=5)
        assert not await backend.release(name=name, token="b")
        assert await backend.release(name=name, token="a")
        assert not await backend.locked(name=name), "release is not re-entrant"
        assert not await backend.release(name=name, token="a")
        assert await elsewhere.acquire(name=name, token="b", duration=5)
        assert await elsewhere.release(name=name, token="b")


async def test_a_lock_ends_when_its_duration_does_and_extends_with_it(
    backend: RaftlockSyncBackend, cluster: Cluster, name: str
) -> None:
    async with RaftlockSyncBackend(cluster.endpoints, prefix="grel/") as elsewhere:
        # A "process" that takes a lock and then does nothing more.
        assert await elsewhere.acquire(name=name, token="dead", duration=0.3)
        assert not await backend.acquire(name=name, token="live", duration=5)
        await asyncio.sleep(1.0)
        assert await backend.acquire(name=name, token="live", duration=0.5)
        for _ in range(4):  # extended every 0.3 s: still held after 1.2 s
            await asyncio.sleep(0.3)
            assert await backend.acquire(name=name, token="live", duration=0.5)
        assert await backend.owned(name=name, token="live")
        # Any positive duration, down to a millisecond from the grant.
        assert await backend.acquire(name=name, token="live", duration=0.001)
        assert await elsewhere.acquire(name=name + "_ms", token="x", duration=0.001)
        await asyncio.sleep(0.5)
        assert not await backend.locked(name=name)
        with pytest.raises(ValueError, match="duration"):
            await backend.acquire(name=name, token="x", duration=0)


async def test_a_force_released_hold_is_not_extended(
    backend: RaftlockSyncBackend, cluster: Cluster, name: str
) -> None:
    assert await backend.acquire(name=name, token="a", duration=30)
    operator = raftlock.asyncio.Client(cluster.endpoints, token=cluster.admin_token)
    assert await operator.force_release("grel/" + name) == 1
    assert not await backend.owned(name=name, token="a")
    async with RaftlockSyncBackend(cluster.endpoints, prefix="grel/") as elsewhere:
        assert await elsewhere.acquire(name=name, token="b", duration=30)
        assert not await backend.acquire(name=name, token="a", duration=30)
        assert await elsewhere.release(name=name, token="b")
    await operator.close()


async def test_grelmicro_lock_runs_on_raftlock(backend: RaftlockSyncBackend, name: str) -> None:
    first = Lock(name, backend=backend, worker=uuid.uuid4(), lease_duration=5)
    second = Lock(name, backend=backend, worker=uuid.uuid4(), lease_duration=5)
    async with first:
        assert await first.owned()
        assert await second.locked()
        with pytest.raises(anyio.WouldBlock):
            await second.acquire_nowait()
    async with second:
        assert await second.owned()
        assert not await first.owned()


async def test_grelmicro_task_lock_runs_a_job_once(backend: RaftlockSyncBackend, name: str) -> None:
    runs: list[str] = []

    def task_lock(worker: str) -> TaskLock:
        return TaskLock(
            name,
            backend=backend,
            worker=uuid.uuid5(uuid.NAMESPACE_DNS, worker),
            min_lock_seconds=1,
            max_lock_seconds=10,
        )

    async with task_lock("a"):
        runs.append("a")
    # Held until min_lock_seconds even though the job is done.
    with pytest.raises(anyio.WouldBlock):
        async with task_lock("b"):
            runs.append("b")
    await asyncio.sleep(1.2)
    async with task_lock("b"):
        runs.append("b")
    assert runs == ["a", "b"]


async def test_grelmicro_leader_election_fails_over(
    backend: RaftlockSyncBackend, name: str
) -> None:
    def election(worker: str) -> LeaderElection:
        return LeaderElection(
            name,
            backend=backend,
            worker=worker,
            lease_duration=1.5,
            renew_deadline=1.0,
            retry_interval=0.2,
            backend_timeout=0.5,
        )

    a, b = election("a"), election("b")
    async with anyio.create_task_group() as tg:
        cancel_a = anyio.CancelScope()

        async def run_a() -> None:
            with cancel_a:
                await a()

        tg.start_soon(run_a)
        with anyio.fail_after(15):
            await a.wait_for_leader()
        tg.start_soon(b)
        await asyncio.sleep(1.0)
        assert a.is_leader() and not b.is_leader()  # noqa: PT018
        cancel_a.cancel()  # a stops (and releases)
        with anyio.fail_after(15):
            await b.wait_for_leader()
        assert b.is_leader()
        tg.cancel_scope.cancel()
