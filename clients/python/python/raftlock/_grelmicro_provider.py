"""grelmicro's ``Provider`` on raftlock: :class:`RaftlockProvider`, one
connection to a cluster that grelmicro's own wiring (``Grelmicro(uses=[...])``,
``Coordination(provider)``) asks for each coordination backend. Imported
through :mod:`raftlock.grelmicro`.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

from grelmicro.providers import Provider

from raftlock._grelmicro_connection import RaftlockConnection
from raftlock._grelmicro_coordination import (
    RaftlockLeaderElectionAdapter,
    RaftlockLockAdapter,
    RaftlockReadWriteLockAdapter,
    RaftlockScheduleAdapter,
)


class RaftlockProvider(RaftlockConnection, Provider):
    """A connection to a raftlock cluster: grelmicro's ``Provider`` (as its
    ``RedisProvider``), so ``Grelmicro(uses=[RaftlockProvider(...)])`` and
    ``Coordination(provider)`` give grelmicro's ``Lock``, ``TaskLock``,
    ``ReadWriteLock``, ``LeaderElection`` and scheduled tasks their raftlock
    backends; the adapters given it share its connection. Open it with
    ``async with`` (a ``Grelmicro`` app does); an adapter made without one
    opens and closes its own. raftlock serves coordination only: asking it
    for a cache, rate limiter, circuit breaker or outbox raises
    ``NotImplementedError`` saying so (grelmicro then leaves that kind to
    another provider). Its arguments are :class:`RaftlockConnection`'s.
    """

    short_name: ClassVar[str] = "raftlock"

    def lock(self, **kwargs: Any) -> RaftlockLockAdapter:
        """grelmicro's ``LockBackend`` (``Lock``, ``TaskLock``) on this connection."""
        return RaftlockLockAdapter(provider=self, **kwargs)

    def readwritelock(self, **kwargs: Any) -> RaftlockReadWriteLockAdapter:
        """grelmicro's ``ReadWriteLockBackend`` on this connection."""
        return RaftlockReadWriteLockAdapter(provider=self, **kwargs)

    def leaderelection(self, **kwargs: Any) -> RaftlockLeaderElectionAdapter:
        """grelmicro's ``LeaderElectionBackend`` on this connection."""
        return RaftlockLeaderElectionAdapter(provider=self, **kwargs)

    def schedule(self, **kwargs: Any) -> RaftlockScheduleAdapter:
        """grelmicro's ``ScheduleBackend`` (cron fires claimed once) on this connection."""
        return RaftlockScheduleAdapter(provider=self, **kwargs)

    def cache(self, **kwargs: Any) -> NoReturn:
        raise _not_served("a cache", "Cache")

    def outbox(self, **kwargs: Any) -> NoReturn:
        raise _not_served("an outbox", "Outbox")

    def ratelimiter(self, **kwargs: Any) -> NoReturn:
        raise _not_served("a rate limiter", "RateLimiterComponent")

    def circuitbreaker(self, **kwargs: Any) -> NoReturn:
        raise _not_served("a circuit breaker", "CircuitBreakerComponent")


def _not_served(what: str, component: str) -> NotImplementedError:
    return NotImplementedError(
        f"RaftlockProvider serves grelmicro's coordination only (Lock, TaskLock, "
        f"ReadWriteLock, LeaderElection, scheduled tasks), not {what}: give {component} "
        f"another provider, e.g. Grelmicro(uses=[raftlock, Coordination(raftlock), "
        f"{component}(RedisProvider(...))])"
    )
