"""raftlock.grelmicro's adapters for grelmicro >= 0.27 keep the contracts of
grelmicro's coordination protocols (coordination/_protocol.py), written
here from their documentation, against a real 3-node cluster, also
through the loss of its Raft leader; grelmicro's Lock, TaskLock,
ReadWriteLock and LeaderElection run on them."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("grelmicro.coordination", reason="grelmicro >= 0.27 (Python 3.12+)")

from conftest import Cluster
from grelmicro import coordination
from grelmicro.coordination._protocol import (
    LeaderElectionBackend,
    LockBackend,
    ReadWriteLockBackend,
    ScheduleBackend,
)
from raftlock.grelmicro import (
    RaftlockLeaderElectionAdapter,
    RaftlockLockAdapter,
    RaftlockProvider,
    RaftlockReadWriteLockAdapter,
    RaftlockScheduleAdapter,
)


@pytest.fixture
async def provider(cluster: Cluster) -> AsyncIterator[RaftlockProvider]:
    async with RaftlockProvider(cluster.endpoints) as p:
        yield p


@pytest.fixture
def name() -> str:
    return "grel/" + uuid.uuid4().hex[:12]


async def eventually(check: object, what: str, timeout: float = 30.0) -> None:
    """Polls the coroutine function `check` until it answers true."""
    deadline = time.monotonic() + timeout
    while not await check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


async def test_every_adapter_satisfies_its_protocol(provider: RaftlockProvider) -> None:
    assert isinstance(RaftlockLockAdapter(provider=provider), LockBackend)
    assert isinstance(RaftlockReadWriteLockAdapter(provider=provider), ReadWriteLockBackend)
    assert isinstance(RaftlockScheduleAdapter(provider=provider), ScheduleBackend)
    assert isinstance(RaftlockLeaderElectionAdapter(provider=provider), LeaderElectionBackend)


async def test_the_lock_backend_contract(
    provider: RaftlockProvider, name: str, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An adapter without a provider opens its own, from RAFTLOCK_ENDPOINTS.
    monkeypatch.setenv("RAFTLOCK_ENDPOINTS", ",".join(cluster.endpoints))
    async with RaftlockLockAdapter(provider=provider) as lock, RaftlockLockAdapter() as other:
        assert not await lock.locked(name=name)
        fence = await lock.acquire(name=name, token="a", duration=30)
        assert isinstance(fence, int)
        assert fence > 0
        assert await other.locked(name=name), "seen from another connection"
        assert await lock.owned(name=name, token="a")
        assert not await lock.owned(name=name, token="b")
        assert await other.acquire(name=name, token="b", duration=30) is None
        # The same token renews from anywhere and keeps its fence.
        assert await other.acquire(name=name, token="a", duration=30) == fence
        assert not await lock.release(name=name, token="b")
        assert await lock.release(name=name, token="a")
        assert not await lock.release(name=name, token="a")
        assert not await lock.locked(name=name)
        again = await other.acquire(name=name, token="b", duration=30)
        assert again is not None
        assert again > fence, "fences keep climbing"
        await other.release(name=name, token="b")
        # A duration is the lock's own TTL: it ends unless renewed.
        short = await lock.acquire(name=name, token="c", duration=0.5)
        assert short is not None

        async def taken_over() -> bool:
            return await other.acquire(name=name, token="d", duration=30) is not None

        await eventually(taken_over, "the expired lock is taken over")
        assert not await lock.owned(name=name, token="c")
        await other.release(name=name, token="d")


async def test_the_read_write_lock_backend_contract(provider: RaftlockProvider, name: str) -> None:
    async with RaftlockReadWriteLockAdapter(provider=provider) as rw:
        assert await rw.acquire_read(name=name, token="r1", duration=30) == 0
        assert await rw.acquire_read(name=name, token="r2", duration=30) == 0
        assert await rw.acquire_write(name=name, token="w", duration=30) is None
        state = await rw.state(name=name)
        assert (state.readers, state.waiting_writers, state.writing) == (2, 1, False)
        # The intent keeps new readers out; a reader already in renews.
        assert await rw.acquire_read(name=name, token="r3", duration=30) is None
        assert await rw.acquire_read(name=name, token="r1", duration=30) == 0
        assert await rw.owned_read(name=name, token="r1")
        assert await rw.release_read(name=name, token="r1")
        assert await rw.release_read(name=name, token="r2")
        assert not await rw.release_read(name=name, token="r2")
        grant = await rw.acquire_write(name=name, token="w", duration=30)
        assert grant is not None
        assert not grant.poisoned
        assert await rw.owned_write(name=name, token="w")
        assert (await rw.state(name=name)).generation == grant.fencing_token
        renewed = await rw.acquire_write(name=name, token="w", duration=30)
        assert renewed is not None
        assert renewed.fencing_token == grant.fencing_token
        # Downgrade: a reader at once, no writer between.
        assert await rw.downgrade(name=name, token="w", duration=30) == grant.fencing_token
        assert await rw.owned_read(name=name, token="w")
        assert await rw.acquire_write(name=name, token="w2", duration=30, intent=False) is None
        assert (await rw.state(name=name)).waiting_writers == 0, "a try leaves no intent"
        assert await rw.acquire_read(name=name, token="r4", duration=30) == grant.fencing_token
        assert await rw.acquire_write(name=name, token="w2", duration=30) is None
        assert await rw.cancel_intent(name=name, token="w2")
        assert not await rw.cancel_intent(name=name, token="w2")
        assert await rw.release_read(name=name, token="w")
        assert await rw.release_read(name=name, token="r4")
        # A writer whose lease ran out poisons the next write grant.
        assert await rw.acquire_write(name=name, token="w3", duration=0.5) is not None

        async def poisoned() -> bool:
            grant = await rw.acquire_write(name=name, token="w4", duration=30)
            return grant is not None and grant.poisoned

        await eventually(poisoned, "w4 takes over from the expired w3, poisoned")
        assert await rw.release_write(name=name, token="w4")
        clean = await rw.acquire_write(name=name, token="w5", duration=30)
        assert clean is not None
        assert not clean.poisoned
        await rw.release_write(name=name, token="w5")


async def test_the_leader_election_backend_contract(provider: RaftlockProvider, name: str) -> None:
    async with RaftlockLeaderElectionAdapter(provider=provider) as election:
        assert await election.get(name=name) is None
        first = await election.acquire_or_renew(
            name=name, token="a", duration=30, metadata={"pod": "a-0"}
        )
        assert (first.holder, first.transitions, dict(first.metadata)) == ("a", 0, {"pod": "a-0"})
        assert first.lease_duration == 30
        other = await election.acquire_or_renew(name=name, token="b", duration=30)
        assert other.holder == "a", "b is told who leads"
        renewed = await election.acquire_or_renew(name=name, token="a", duration=30)
        assert renewed.acquired_at == first.acquired_at
        assert renewed.renewed_at >= first.renewed_at
        got = await election.get(name=name)
        assert got is not None
        assert got.holder == "a"
        assert not await election.release(name=name, token="b")
        # a's lease ends unrenewed: b takes over, one more transition.
        await election.acquire_or_renew(name=name, token="a", duration=0.5)

        async def b_leads() -> bool:
            record = await election.acquire_or_renew(name=name, token="b", duration=30)
            return record.holder == "b"

        await eventually(b_leads, "b takes the expired lead")
        record = await election.get(name=name)
        assert record is not None
        assert record.transitions == 1
        assert await election.release(name=name, token="b")
        assert await election.get(name=name) is None


async def test_the_schedule_backend_contract(provider: RaftlockProvider, name: str) -> None:
    async with RaftlockScheduleAdapter(provider=provider) as schedule:
        assert await schedule.last_fired(name) is None
        due = 1_764_000_000.5
        claims = await asyncio.gather(*(schedule.claim(name, due) for _ in range(8)))
        assert claims.count(True) == 1, "exactly one claim wins a fire"
        assert not await schedule.claim(name, due - 60)
        assert await schedule.last_fired(name) == due
        assert await schedule.claim(name, due + 60)


async def test_grelmicros_lock_runs_on_the_adapter(provider: RaftlockProvider, name: str) -> None:
    inside: list[str] = []
    overlaps: list[str] = []

    async def worker(me: str) -> None:
        async with RaftlockLockAdapter(provider=provider) as backend:
            lock = coordination.Lock(name.replace("/", "-"), backend=backend)
            for _ in range(3):
                async with lock:
                    if inside:
                        overlaps.append(me)
                    inside.append(me)
                    await asyncio.sleep(0.05)
                    inside.remove(me)

    await asyncio.gather(*(worker(f"w{i}") for i in range(3)))
    assert not overlaps


async def test_holds_records_and_fires_outlive_the_raft_leader(fresh_cluster: Cluster) -> None:
    async with (
        RaftlockProvider(fresh_cluster.endpoints) as provider,
        RaftlockLockAdapter(provider=provider) as lock,
        RaftlockLeaderElectionAdapter(provider=provider) as election,
        RaftlockScheduleAdapter(provider=provider) as schedule,
    ):
        fence = await lock.acquire(name="job", token="a", duration=60)
        assert fence is not None
        await election.acquire_or_renew(name="lead", token="a", duration=60)
        assert await schedule.claim("cron", 60.0)

        fresh_cluster.kill(await asyncio.to_thread(fresh_cluster.wait_for_leader))
        await asyncio.to_thread(fresh_cluster.wait_for_leader)

        assert await lock.acquire(name="job", token="a", duration=60) == fence
        assert await lock.acquire(name="job", token="b", duration=60) is None
        record = await election.acquire_or_renew(name="lead", token="b", duration=60)
        assert record.holder == "a"
        assert not await schedule.claim("cron", 60.0)
        assert await schedule.last_fired("cron") == 60.0


async def test_grelmicros_task_lock_runs_once_per_hold(
    provider: RaftlockProvider, name: str
) -> None:
    from grelmicro.errors import WouldBlockError

    async with RaftlockLockAdapter(provider=provider) as backend:
        first = coordination.TaskLock(
            name.replace("/", "-"), backend=backend, worker="a", min_hold_duration=30
        )
        second = coordination.TaskLock(
            name.replace("/", "-"), backend=backend, worker="b", min_hold_duration=30
        )
        async with first:
            pass
        # Held for min_hold_duration after the block: b does not run it again.
        with pytest.raises(WouldBlockError):
            async with second:
                pass


async def test_grelmicros_read_write_lock_runs_on_the_adapter(
    provider: RaftlockProvider, name: str
) -> None:
    async with RaftlockReadWriteLockAdapter(provider=provider) as backend:
        catalog = coordination.ReadWriteLock(name.replace("/", "-"), backend=backend)
        async with catalog.write as writing:
            fence = writing.fencing_token
            assert not writing.poisoned
            reading = await writing.downgrade()
            assert reading.generation == fence
        async with catalog.read as reading:
            assert reading.generation == fence
            state = await catalog.state()
            assert (state.readers, state.writing) == (1, False)
            assert state.generation == fence


async def test_grelmicros_leader_election_keeps_one_leader_through_a_raft_leader_kill(
    fresh_cluster: Cluster,
) -> None:
    async with RaftlockProvider(fresh_cluster.endpoints) as provider:
        backend = RaftlockLeaderElectionAdapter(provider=provider)
        elections = [
            coordination.LeaderElection(
                "grel-election",
                backend=backend,
                worker=worker,
                lease_duration=6,
                renew_deadline=4,
                retry_interval=0.2,
                backend_timeout=2,
            )
            for worker in ("w1", "w2")
        ]
        tasks = [asyncio.create_task(e()) for e in elections]
        try:
            await run_the_election(fresh_cluster, backend, elections, tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def run_the_election(
    cluster: Cluster,
    backend: RaftlockLeaderElectionAdapter,
    elections: list[coordination.LeaderElection],
    tasks: list[asyncio.Task[None]],
) -> None:
    """One worker leads, through a Raft leader kill and longer than its
    lease; when it stops, the other takes over; never both at once."""
    both: list[float] = []

    async def watch() -> None:
        while True:
            if all(e.is_leader() for e in elections):
                both.append(time.monotonic())
            await asyncio.sleep(0.02)

    async def one_leads() -> bool:
        return sum(e.is_leader() for e in elections) == 1

    watcher = asyncio.create_task(watch())
    try:
        await eventually(one_leads, "one worker leads")
        leader = next(e for e in elections if e.is_leader())
        # grelmicro names the election's lease "leader:<name>".
        record = await backend.get(name="leader:grel-election")
        assert record is not None
        assert leader.record is not None
        assert record.holder == leader.record.holder

        cluster.kill(await asyncio.to_thread(cluster.wait_for_leader))
        await asyncio.to_thread(cluster.wait_for_leader)
        await asyncio.sleep(8)  # longer than the lease: renewed through the new Raft leader
        await eventually(one_leads, "one worker still leads")

        # The leading worker stops: it releases, the other takes over.
        index = next(i for i, e in enumerate(elections) if e.is_leader())
        tasks[index].cancel()
        await asyncio.gather(tasks[index], return_exceptions=True)
        other = elections[1 - index]

        async def other_leads() -> bool:
            return other.is_leader()

        await eventually(other_leads, "the other worker takes over")
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    assert not both, f"two workers led at once at {both}"
