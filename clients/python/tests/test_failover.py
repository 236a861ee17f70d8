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
    own = raftlock.redis.Lock(holder, "py/failover/own", timeout=5)
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
