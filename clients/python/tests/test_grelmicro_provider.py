"""grelmicro's own wiring: `Grelmicro(uses=[RaftlockProvider(...)])` (and
`Coordination(provider)`) gives grelmicro's Lock, TaskLock, ReadWriteLock,
LeaderElection and scheduled tasks their raftlock backends, against a real
cluster; the kinds raftlock does not serve say so."""

from __future__ import annotations

import time
import uuid

import pytest

pytest.importorskip("grelmicro.providers", reason="grelmicro >= 0.27 (Python 3.12+)")

import raftlock
from conftest import Cluster
from grelmicro import Grelmicro
from grelmicro.coordination import Coordination, Lock, ReadWriteLock
from raftlock.grelmicro import (
    RaftlockLeaderElectionAdapter,
    RaftlockLockAdapter,
    RaftlockProvider,
    RaftlockReadWriteLockAdapter,
    RaftlockScheduleAdapter,
)


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def test_one_provider_in_uses_wires_every_coordination_backend(
    cluster: Cluster, client: raftlock.Client
) -> None:
    """Before RaftlockProvider was a grelmicro Provider, grelmicro took it
    for a plain context manager and wired nothing: `micro.coordination`
    fails with AttributeError (no component of kind 'coordination'), and
    `Lock(name)` with `OutOfContextError: ... resolved no backend`."""
    provider = RaftlockProvider(cluster.endpoints)
    micro = Grelmicro(uses=[provider])
    async with micro:
        coordination = micro.coordination
        backends = (
            coordination.lock_backend,
            coordination.rwlock_backend,
            coordination.election_backend,
            coordination.schedule_backend,
        )
        kinds = (
            RaftlockLockAdapter,
            RaftlockReadWriteLockAdapter,
            RaftlockLeaderElectionAdapter,
            RaftlockScheduleAdapter,
        )
        for backend, kind in zip(backends, kinds, strict=True):
            assert isinstance(backend, kind)
            assert backend.provider is provider  # one shared connection

        # grelmicro's own primitives, with no backend= given: the holds are
        # the cluster's, seen by another client.
        name = fresh("reports")
        async with Lock(name):
            held = [i.name for i in client.list_locks() if name in i.name and i.holders]
            assert len(held) == 1, held
        assert not [i.name for i in client.list_locks() if name in i.name and i.holders]

        catalog = ReadWriteLock(fresh("catalog"))
        async with catalog.write as writing:
            fence = writing.fencing_token
        async with catalog.read as reading:
            assert reading.generation == fence

        due = time.time()
        schedule = fresh("nightly")
        assert await coordination.schedule_backend.claim(name=schedule, due=due)
        assert not await coordination.schedule_backend.claim(name=schedule, due=due)
    with pytest.raises(RuntimeError, match="not open"):
        _ = provider.client  # closed with the app


async def test_coordination_of_the_provider_is_grelmicros_explicit_form(
    cluster: Cluster,
) -> None:
    provider = RaftlockProvider(cluster.endpoints)
    micro = Grelmicro(uses=[provider, Coordination(provider)])
    async with micro:
        assert isinstance(micro.coordination.lock_backend, RaftlockLockAdapter)
        async with Lock(fresh("explicit")):
            pass


def test_kinds_raftlock_does_not_serve_say_so() -> None:
    provider = RaftlockProvider("127.0.0.1:1")
    for factory, component in [
        (provider.cache, "Cache"),
        (provider.ratelimiter, "RateLimiterComponent"),
        (provider.circuitbreaker, "CircuitBreakerComponent"),
        (provider.outbox, "Outbox"),
    ]:
        with pytest.raises(NotImplementedError, match=f"coordination only.*give {component}"):
            factory()
