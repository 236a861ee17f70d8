"""Holds survive the loss of the leader node: the client follows the new
leader, keeps its session alive, and nobody else is granted the lock."""

from __future__ import annotations

import time

import raftlock
import raftlock.redis
from conftest import Cluster


def test_locks_survive_a_leader_kill(fresh_cluster: Cluster) -> None:
    endpoints = fresh_cluster.endpoints
    holder = raftlock.Client(endpoints, session_ttl=3)
    rival = raftlock.Client(endpoints, session_ttl=3)
    lock = holder.lock("py/failover")
    assert lock.acquire()
    fence = lock.fence
    # Its own TTL well above the 4 s slept below plus the failover: with
    # 5 s, a slow election or a slow answer let it expire (seen in CI runs).
    own = raftlock.redis.Lock(holder, "py/failover/own", timeout=15)
    assert own.acquire()

    fresh_cluster.kill(fresh_cluster.wait_for_leader())
    fresh_cluster.wait_for_leader()
    time.sleep(4)  # longer than the session TTL: kept alive through the new leader

    assert not lock.lost.is_set()
    assert lock.owned()
    assert rival.check("py/failover", fence)
    assert not rival.lock("py/failover").acquire(blocking=False)
    assert own.owned()
    assert own.extend(5)
    assert not raftlock.redis.Lock(rival, "py/failover/own", timeout=5).acquire(blocking=False)

    lock.release()
    own.release()
    with rival.lock("py/failover") as theirs:
        assert theirs.fence > fence
    holder.close()
    rival.close()


def test_a_waiter_is_granted_once_across_a_leader_kill(fresh_cluster: Cluster) -> None:
    import threading

    endpoints = fresh_cluster.endpoints
    holder = raftlock.Client(endpoints, session_ttl=3)
    waiter = raftlock.Client(endpoints, session_ttl=3)
    held = holder.lock("py/failover/wait")
    assert held.acquire()
    waiting = waiter.lock("py/failover/wait")
    granted: list[bool] = []
    t = threading.Thread(target=lambda: granted.append(waiting.acquire(timeout=60)))
    t.start()
    deadline = time.monotonic() + 15
    while not (holder.describe("py/failover/wait") or _no_waiters()).waiters:
        assert time.monotonic() < deadline, "the waiter queued"
        time.sleep(0.05)

    fresh_cluster.kill(fresh_cluster.wait_for_leader())
    fresh_cluster.wait_for_leader()
    held.release()
    t.join(60)
    assert granted == [True]
    info = holder.describe("py/failover/wait")
    assert info is not None
    assert [(h.owner, h.count) for h in info.holders] == [(waiting.owner, 1)], "granted once"
    assert not info.waiters
    waiting.release()
    assert not waiting.locked()
    holder.close()
    waiter.close()


def _no_waiters() -> raftlock.LockInfo:
    class Empty:
        waiters: list[raftlock.Waiter] = []  # noqa: RUF012

    return Empty()  # type: ignore[return-value]


async def test_abort_on_loss_fires_when_the_cluster_is_cut_off(fresh_cluster: Cluster) -> None:
    import asyncio

    import pytest
    import raftlock.asyncio

    client = raftlock.asyncio.Client(fresh_cluster.endpoints, session_ttl=2, retry_for=1)
    started = asyncio.Event()
    noticed: list[float] = []

    async def critical_section() -> None:
        lock = client.lock(
            "py/failover/cut",
            abort_on_loss=True,
            on_lost=lambda _: noticed.append(time.monotonic()),
        )
        async with lock:
            started.set()
            await asyncio.sleep(120)

    task = asyncio.create_task(critical_section())
    await asyncio.wait_for(started.wait(), 15)
    for node in list(fresh_cluster.procs):
        fresh_cluster.pause(node)
    try:
        with pytest.raises(raftlock.LockLost):
            await asyncio.wait_for(task, 30)
        # Noticed by the client's own clock, with no node answering.
        assert noticed
    finally:
        for node in list(fresh_cluster.procs):
            fresh_cluster.resume(node)
