"""grelmicro's ``Provider`` on raftlock: :class:`RaftlockProvider`, one
connection to a cluster that grelmicro's own wiring (``Grelmicro(uses=[...])``,
``Coordination(provider)``) asks for each coordination backend. Imported
through :mod:`raftlock.grelmicro`.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from grelmicro.providers import Provider
from typing_extensions import Self

from raftlock.asyncio import Client

if TYPE_CHECKING:
    from raftlock._grelmicro_coordination import (
        RaftlockLeaderElectionAdapter,
        RaftlockLockAdapter,
        RaftlockReadWriteLockAdapter,
        RaftlockScheduleAdapter,
    )


class RaftlockProvider(Provider):
    """A connection to a raftlock cluster: grelmicro's ``Provider`` (as its
    ``RedisProvider``), so ``Grelmicro(uses=[RaftlockProvider(...)])`` and
    ``Coordination(provider)`` give grelmicro's ``Lock``, ``TaskLock``,
    ``ReadWriteLock``, ``LeaderElection`` and scheduled tasks their raftlock
    backends; the adapters given it share its connection. Open it with
    ``async with`` (a ``Grelmicro`` app does); an adapter made without one
    opens and closes its own. raftlock serves coordination only: asking it
    for a cache, rate limiter, circuit breaker or outbox raises
    ``NotImplementedError`` saying so (grelmicro then leaves that kind to
    another provider).

    Args:
        endpoints: client endpoints (default ``RAFTLOCK_ENDPOINTS``, else
            ``127.0.0.1:7379``).
        token, cacert, cert, key: as :class:`raftlock.asyncio.Client`'s
            (defaults from ``RAFTLOCK_TOKEN``, ``RAFTLOCK_CACERT``, ...).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str] | None = None,
        *,
        token: str | None = None,
        cacert: str | PathLike[str] | None = None,
        cert: str | PathLike[str] | None = None,
        key: str | PathLike[str] | None = None,
    ) -> None:
        self._endpoints = endpoints
        self._token = token
        self._tls = (cacert, cert, key)
        self._client: Client | None = None

    async def __aenter__(self) -> Self:
        if self._client is None:
            cacert, cert, key = self._tls
            self._client = Client(
                self._endpoints, token=self._token, cacert=cacert, cert=cert, key=key
            )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    @property
    def client(self) -> Client:
        """The open client; refused before ``async with``."""
        if self._client is None:
            raise RuntimeError(
                "RaftlockProvider is not open: use `async with provider:` "
                "or an adapter's `async with`"
            )
        return self._client

    short_name: ClassVar[str] = "raftlock"

    def lock(self, **kwargs: Any) -> RaftlockLockAdapter:
        """grelmicro's ``LockBackend`` (``Lock``, ``TaskLock``) on this connection."""
        from raftlock._grelmicro_coordination import RaftlockLockAdapter

        return RaftlockLockAdapter(provider=self, **kwargs)

    def readwritelock(self, **kwargs: Any) -> RaftlockReadWriteLockAdapter:
        """grelmicro's ``ReadWriteLockBackend`` on this connection."""
        from raftlock._grelmicro_coordination import RaftlockReadWriteLockAdapter

        return RaftlockReadWriteLockAdapter(provider=self, **kwargs)

    def leaderelection(self, **kwargs: Any) -> RaftlockLeaderElectionAdapter:
        """grelmicro's ``LeaderElectionBackend`` on this connection."""
        from raftlock._grelmicro_coordination import RaftlockLeaderElectionAdapter

        return RaftlockLeaderElectionAdapter(provider=self, **kwargs)

    def schedule(self, **kwargs: Any) -> RaftlockScheduleAdapter:
        """grelmicro's ``ScheduleBackend`` (cron fires claimed once) on this connection."""
        from raftlock._grelmicro_coordination import RaftlockScheduleAdapter

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
