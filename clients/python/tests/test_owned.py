"""A hold the cluster took away — `raftlock locks force-release NAME`, as an
operator types it, or a lease that expires between two keep-alives — is
seen by the very next `owned()`, `Fenced.write` and `task_lock.run`, in
both APIs: each asks the cluster (one linearizable `Check`).

The holders' sessions live a minute, so the background keep-alive round
that also notices such a loss (a third of the TTL) is 20 s away: only the
proof asked for can see it in time. Before the fix, right after the
force-release `client.check(name, fence)` was already False while
`owned()` answered True, `Fenced.write` ran the write, and `run` answered
True; each assertion below marked "(fix)" failed that way.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import raftlock
import raftlock.asyncio
import raftlock.redis
from conftest import Cluster, wait_until

#: The holders' session TTL: its keep-alive round is 20 s away.
SESSION_TTL = 60.0


@pytest.fixture
def name() -> str:
    return f"py/owned/{uuid.uuid4().hex[:12]}"


@pytest.fixture
def holder(cluster: Cluster) -> Iterator[raftlock.Client]:
    c = raftlock.Client(cluster.endpoints, session_ttl=SESSION_TTL)
    yield c
    c.close()


@pytest.fixture
async def aholder(cluster: Cluster) -> AsyncIterator[raftlock.asyncio.Client]:
    c = raftlock.asyncio.Client(cluster.endpoints, session_ttl=SESSION_TTL)
    yield c
    await c.close()


def force_release(cluster: Cluster, name: str) -> None:
    """What the operator types: `raftlock locks force-release NAME`."""
    # An operator call: on a member's host, its data dir gives the
    # cluster's admin credential (docs/security.md, "Operator calls").
    out = cluster.cli("locks", "force-release", name, "--data-dir", str(cluster.data_dir(1)))
    assert "released 1 holder" in out, out


def expire(other: raftlock.Client, name: str) -> None:
    """Cuts the lease of `name`'s holder to 50 ms from another client and
    waits until the cluster has expired it (a wait, not a timed check: the
    timeout only stops a wedged test)."""
    info = other.describe(name)
    assert info is not None, f"{name} is not held"
    assert info.holders, f"{name} is not held"
    holder = info.holders[0]
    other.set_lease_ttl(holder.lease, 0.05)
    wait_until(
        "the cluster expired the lease",
        lambda: not other.check(name, holder.fence),
        timeout=30,
    )


# The blocking API.


def test_owned_sees_a_force_release_at_once(
    cluster: Cluster, holder: raftlock.Client, name: str
) -> None:
    lock = holder.lock(name)
    assert lock.acquire()
    assert lock.owned()
    assert lock.held
    force_release(cluster, name)
    assert not holder.check(name, lock.fence)
    assert not lock.owned()  # (fix)
    assert not lock.held, "the loss found is kept"
    with pytest.raises(raftlock.LockLost):
        lock.release()


def test_fenced_write_refuses_after_a_force_release(
    cluster: Cluster, holder: raftlock.Client, name: str
) -> None:
    lock = holder.lock(name)
    assert lock.acquire()
    written: list[int] = []
    fenced = raftlock.Fenced(lock, written)
    fenced.write(lambda res, fence: res.append(fence))
    force_release(cluster, name)
    with pytest.raises(raftlock.LockLost):  # (fix)
        fenced.write(lambda res, fence: res.append(fence))
    assert written == [lock.fence], "the write did not run"

    leading = holder.election(name + "/e").campaign("me")
    fenced_lead = raftlock.Fenced(leading, written)
    force_release(cluster, name + "/e")
    with pytest.raises(raftlock.LockLost):  # (fix)
        fenced_lead.write(lambda res, fence: res.append(fence))
    assert written == [lock.fence]


def test_task_lock_run_reports_a_job_whose_lock_was_force_released(
    cluster: Cluster, holder: raftlock.Client, name: str
) -> None:
    ran: list[str] = []

    def job() -> None:
        force_release(cluster, name)
        ran.append("job")

    with pytest.raises(raftlock.LockLost):  # (fix: run answered True)
        holder.task_lock(name, min_hold=0.1, max_hold=SESSION_TTL).run(job)
    assert ran == ["job"]
    guard = holder.task_lock(name, min_hold=0.1, max_hold=SESSION_TTL).try_acquire()
    assert guard is not None, "the lost hold was not left behind"
    force_release(cluster, name)
    with pytest.raises(raftlock.LockLost):  # (fix)
        guard.ensure_owned()
    with pytest.raises(raftlock.LockLost):
        guard.finish()


def test_an_expiry_between_keep_alives_is_seen_at_once(
    holder: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    lock = holder.lock(name, ttl=SESSION_TTL)
    assert lock.acquire()
    expire(other, name)
    with pytest.raises(raftlock.LockLost):  # (fix)
        raftlock.Fenced(lock, []).write(lambda res, fence: res.append(fence))
    assert not lock.owned()

    def job() -> None:
        expire(other, name + "/t")

    with pytest.raises(raftlock.LockLost):  # (fix)
        holder.task_lock(name + "/t", min_hold=0.1, max_hold=SESSION_TTL).run(job)


def test_redis_lock_owned_asks_the_cluster(
    cluster: Cluster, holder: raftlock.Client, name: str
) -> None:
    lock = raftlock.redis.Lock(holder, name)
    assert lock.acquire()
    assert lock.owned()
    force_release(cluster, name)
    assert not lock.owned()
    assert not lock.locked()


# asyncio.


async def test_asyncio_owned_sees_a_force_release_at_once(
    cluster: Cluster, aholder: raftlock.asyncio.Client, name: str
) -> None:
    lock = aholder.lock(name)
    assert await lock.acquire()
    assert await lock.owned()
    await asyncio.to_thread(force_release, cluster, name)
    assert not await aholder.check(name, lock.fence)
    assert not await lock.owned()  # (fix)
    assert not lock.held
    with pytest.raises(raftlock.LockLost):
        await lock.release()


async def test_asyncio_fenced_write_refuses_after_a_force_release(
    cluster: Cluster, aholder: raftlock.asyncio.Client, name: str
) -> None:
    lock = aholder.lock(name)
    assert await lock.acquire()
    written: list[int] = []
    fenced = raftlock.asyncio.Fenced(lock, written)
    await fenced.write(lambda res, fence: res.append(fence))
    await asyncio.to_thread(force_release, cluster, name)

    async def write(res: list[int], fence: int) -> None:
        res.append(fence)

    with pytest.raises(raftlock.LockLost):  # (fix)
        await fenced.write(write)
    assert written == [lock.fence], "the write did not run"

    leading = await aholder.election(name + "/e").campaign("me")
    await asyncio.to_thread(force_release, cluster, name + "/e")
    with pytest.raises(raftlock.LockLost):  # (fix)
        await raftlock.asyncio.Fenced(leading, written).write(write)
    assert written == [lock.fence]


async def test_asyncio_task_lock_run_reports_a_job_whose_lock_was_force_released(
    cluster: Cluster, aholder: raftlock.asyncio.Client, name: str
) -> None:
    ran: list[str] = []

    async def job() -> None:
        await asyncio.to_thread(force_release, cluster, name)
        ran.append("job")

    with pytest.raises(raftlock.LockLost):  # (fix: run answered True)
        await aholder.task_lock(name, min_hold=0.1, max_hold=SESSION_TTL).run(job)
    assert ran == ["job"]


async def test_asyncio_an_expiry_between_keep_alives_is_seen_at_once(
    aholder: raftlock.asyncio.Client, other: raftlock.Client, name: str
) -> None:
    lock = aholder.lock(name, ttl=SESSION_TTL)
    assert await lock.acquire()
    await asyncio.to_thread(expire, other, name)
    assert not await lock.owned()  # (fix)

    async def job() -> None:
        await asyncio.to_thread(expire, other, name + "/t")

    with pytest.raises(raftlock.LockLost):  # (fix)
        await aholder.task_lock(name + "/t", min_hold=0.1, max_hold=SESSION_TTL).run(job)


async def test_asyncio_redis_lock_owned_asks_the_cluster(
    cluster: Cluster, aholder: raftlock.asyncio.Client, name: str
) -> None:
    lock = raftlock.redis.AsyncLock(aholder, name)
    assert await lock.acquire()
    assert await lock.owned()
    await asyncio.to_thread(force_release, cluster, name)
    assert not await lock.owned()
