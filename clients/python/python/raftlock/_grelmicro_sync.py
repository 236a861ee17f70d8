"""grelmicro 0.20's ``SyncBackend`` on raftlock (Python 3.10 and 3.11,
where 0.20 is the newest grelmicro): grelmicro's ``Lock``, ``TaskLock``
and ``LeaderElection`` of ``grelmicro.sync`` run on a raftlock cluster
unchanged. Imported through :mod:`raftlock.grelmicro`.

>>> from grelmicro.sync import Lock, use_backend        # doctest: +SKIP
>>> from raftlock.grelmicro import RaftlockSyncBackend  # doctest: +SKIP
>>> async with RaftlockSyncBackend("127.0.0.1:7379") as backend:  # doctest: +SKIP
...     use_backend(backend)
...     async with Lock("reports"):
...         ...

The contract of grelmicro's ``sync/abc.py``, and how it is kept:

- ``acquire(name, token, duration)`` takes the lock for ``token`` for
  ``duration`` seconds, or extends it if ``token`` holds it already. The
  lock is held on a lease of its own whose TTL is ``duration`` and which is
  never kept alive: a process that dies loses its locks when their duration
  ends, as with Redis ``SET PX``. Lock and lease are made in one Raft entry
  (``Acquire`` with ``ttl_ms``), so the duration counts from the grant and
  a busy lock makes no lease. Extending sets the lease's TTL again
  (``Lease.SetTtl``, replicated), so the lock then ends ``duration`` after
  the extension. Any positive duration is taken, down to a millisecond.
- ``release(name, token)`` ends the hold and its lease; it is not
  re-entrant (one release ends any number of acquires), and answers
  ``False`` for a lock the token does not hold.
- ``locked(name)`` and ``owned(name, token)`` ask the leader (linearizable).

A token's hold is found by the backend object that took it: a token is one
worker's, in one process, as grelmicro makes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from grelmicro.sync.abc import SyncBackend

from raftlock import _own_ttl
from raftlock._common import lease_ttl as _ttl
from raftlock._scope import AsyncScoped
from raftlock.asyncio import Client
from raftlock.errors import LeaseExpired


class RaftlockSyncBackend(AsyncScoped, SyncBackend):
    """grelmicro's ``SyncBackend`` on a raftlock cluster.

    Args:
        endpoints: client endpoints (default ``RAFTLOCK_ENDPOINTS``, else
            ``127.0.0.1:7379``); ignored when ``client`` is given.
        client: a :class:`raftlock.asyncio.Client` to use.
        prefix: put before every lock name (as the Redis backend's).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str] | None = None,
        *,
        client: Client | None = None,
        prefix: str = "",
    ) -> None:
        self._client = client if client is not None else Client(endpoints)
        self._own_client = client is None
        self._prefix = prefix
        # (name, token) -> (lease, fence) of the holds this backend took.
        self._holds: dict[tuple[str, str], tuple[int, int]] = {}

    async def _on_exit(self) -> None:
        if self._own_client:
            await self._client.close()

    async def acquire(self, *, name: str, token: str, duration: float) -> bool:
        """Takes ``name`` for ``token`` for ``duration`` seconds, or extends
        it if ``token`` holds it; ``False`` if another token holds it."""
        ttl = _ttl(duration)
        key = self._prefix + name
        native = self._client._native
        held = self._holds.get((key, token))
        if held is not None:
            lease, fence = held
            try:
                await native.set_lease_ttl(lease, ttl, aio=True)
            except LeaseExpired:
                del self._holds[(key, token)]
            else:
                if await native.check(key, fence, aio=True):
                    return True
                # Force-released while the lease lived: start again.
                del self._holds[(key, token)]
                await self._revoke(lease)
        info = await self._client.describe(key)
        if info is not None and info.holders:
            return False
        held = await _own_ttl.acquire_async(native, key, token, ttl, False, None)
        if held is None:
            return False
        lease, fence = held
        self._holds[(key, token)] = (lease, fence)
        return True

    async def release(self, *, name: str, token: str) -> bool:
        """Ends ``token``'s hold of ``name``; ``False`` if it held none."""
        held = self._holds.pop((self._prefix + name, token), None)
        if held is None:
            return False
        return await self._revoke(held[0]) > 0

    async def locked(self, *, name: str) -> bool:
        """Whether anyone holds ``name``."""
        info = await self._client.describe(self._prefix + name)
        return info is not None and bool(info.holders)

    async def owned(self, *, name: str, token: str) -> bool:
        """Whether ``token`` holds ``name``."""
        info = await self._client.describe(self._prefix + name)
        return info is not None and any(h.owner == token for h in info.holders)

    async def _revoke(self, lease: int) -> int:
        return await _own_ttl.revoke_async(self._client._native, lease)


__all__ = ["RaftlockSyncBackend"]
