"""A lock shaped like redis-py's ``redis.lock.Lock``, on raftlock.

Code written against redis-py's lock keeps its calls::

    # before                                 # after
    lock = redis.lock("jobs", timeout=30)    lock = raftlock.redis.Lock(client, "jobs", timeout=30)
    if lock.acquire(blocking_timeout=5):     if lock.acquire(blocking_timeout=5):
        lock.extend(30)                          lock.extend(30)
        lock.release()                           lock.release()

What is the same: ``acquire(blocking, blocking_timeout, token)``,
``release()``, ``extend(additional_time, replace_ttl)``, ``reacquire()``,
``locked()``, ``owned()``, ``with``; ``timeout`` is the lock's own TTL
(Redis ``PX``): it ends that long after acquire, extend or reacquire
unless extended again, and a process that dies loses it then.
:class:`LockError` and :class:`LockNotOwnedError` are subclasses of
redis-py's (``redis.exceptions.LockError``, ``LockNotOwnedError``) when
redis-py is installed, so existing ``except`` blocks catch them; they are
also :class:`raftlock.errors.RaftlockError` and ``ValueError``.

What differs, and why:

- A waiting ``acquire`` queues at the server (FIFO) and is granted as the
  lock frees, instead of polling every ``sleep`` seconds: ``sleep`` is
  accepted and not used.
- ``timeout=None`` holds the lock on the client's session lease, kept alive
  in the background: it never ends while the process lives, and ends
  ``session_ttl`` after the process dies (redis-py's would stay locked
  for ever).
- The lock comes with a fencing token, :attr:`Lock.fence`, strictly
  greater than any earlier grant of the name: pass it to what the lock
  protects (Redis locks have none).
- The thread that holds the lock acquiring it again gets
  :class:`LockError` at once, where redis-py's lock would wait on itself
  until ``blocking_timeout``.
- It survives the loss of a node: the grant is replicated by Raft before
  it is answered.
- Errors of the cluster itself (no quorum, a bad argument) are raftlock's
  own (:mod:`raftlock.errors`: ``Unavailable`` is the built-in
  ``ConnectionError``, not ``redis.exceptions.ConnectionError``).
"""

from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING, Any

from raftlock import _own_ttl
from raftlock._common import ttl_seconds
from raftlock._native import LeaseTtl, LockInfo
from raftlock._scope import AsyncScoped, Scoped
from raftlock._sync import Client
from raftlock.asyncio import Client as AsyncClient
from raftlock.errors import LeaseExpired, NotHeld, RaftlockError, Timeout


def _redis_lock_errors() -> tuple[type[ValueError], type[ValueError]]:
    """redis-py's ``LockError`` and ``LockNotOwnedError`` when redis-py is
    installed, so ``except redis.exceptions.LockError`` catches ours; else
    ``ValueError`` (what redis-py's derive from) for both."""
    try:
        from redis import exceptions
    except ImportError:
        return ValueError, ValueError
    return exceptions.LockError, exceptions.LockNotOwnedError


if TYPE_CHECKING:
    _RedisLockError = ValueError
    _RedisLockNotOwnedError = ValueError
else:
    _RedisLockError, _RedisLockNotOwnedError = _redis_lock_errors()


class LockError(RaftlockError, _RedisLockError):
    """redis-py's ``LockError`` (a subclass of it when redis-py is
    installed, else of ``ValueError`` as redis-py's is): the lock cannot be
    used this way. ``message`` and ``lock_name`` as redis-py's."""

    def __init__(self, message: str | None = None, lock_name: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.lock_name = lock_name


class LockNotOwnedError(LockError, _RedisLockNotOwnedError):
    """redis-py's ``LockNotOwnedError`` (a subclass of it when redis-py is
    installed): the lock is no longer ours."""


class _Held:
    """The token, lease and fence of the current hold."""

    token: str | None = None
    lease: int | None = None
    fence: int | None = None


class _ThreadHeld(_Held, threading.local):
    """The same, per thread (class attributes are every thread's defaults)."""


class _LockBase:
    """What the blocking and the asyncio lock share: settings, the hold of
    this thread (or of every thread), and every check that makes no call."""

    def __init__(
        self,
        client: Any,
        name: str,
        timeout: float | None = None,
        sleep: float = 0.1,
        blocking: bool = True,
        blocking_timeout: float | None = None,
        thread_local: bool = True,
    ) -> None:
        self.client = client
        self.name = name
        self.timeout = None if timeout is None else ttl_seconds("timeout", timeout)
        self.sleep = sleep
        self.blocking = blocking
        self.blocking_timeout = blocking_timeout
        self.thread_local = thread_local
        self.local: _Held = _ThreadHeld() if thread_local else _Held()

    def _begin(
        self, blocking: bool | None, blocking_timeout: float | None, token: str | bytes | None
    ) -> tuple[str, bool, float | None]:
        """An acquire's token, whether it waits, and for how long."""
        if self.local.token is not None:
            raise LockError(f"lock {self.name!r} is already held by this thread", self.name)
        if isinstance(token, bytes):
            token = token.decode()
        wait = self.blocking if blocking is None else blocking
        limit = self.blocking_timeout if blocking_timeout is None else blocking_timeout
        if limit is not None and limit <= 0:
            wait = False  # redis-py's blocking_timeout=0: one try
        return token or uuid.uuid4().hex, wait, limit if wait else None

    def _record(self, token: str, lease: int, fence: int) -> None:
        self.local.token, self.local.lease, self.local.fence = token, lease, fence

    def _end(self) -> tuple[str, int | None]:
        """The token and lease of the hold being released, forgotten now."""
        token, lease = self.local.token, self.local.lease
        if token is None:
            raise LockError("Cannot release an unlocked lock", self.name)
        self.local.token = self.local.lease = self.local.fence = None
        return token, lease if self.timeout is not None else None

    def _own(self, verb: str) -> tuple[str, int]:
        """The token and lease of a hold with its own TTL, for ``verb``."""
        token, lease = self.local.token, self.local.lease
        if token is None:
            raise LockError(f"Cannot {verb} an unlocked lock", self.name)
        if self.timeout is None or lease is None:
            raise LockError(f"Cannot {verb} a lock with no timeout", self.name)
        return token, lease

    def _left(self, verb: str, token: str, ttl: LeaseTtl) -> float:
        """Seconds a hold has left, if its lease still holds it."""
        if (self.name, token, True) not in ttl.attachments:
            raise _not_owned(verb, self.name)
        return ttl.remaining or 0.0

    def _holds(self, info: LockInfo | None) -> bool:
        token = self.local.token
        return (
            token is not None and info is not None and any(h.owner == token for h in info.holders)
        )

    @property
    def fence(self) -> int:
        """The fencing token of the current hold."""
        if self.local.fence is None:
            raise LockError("the lock is not held", self.name)
        return int(self.local.fence)


def _not_owned(verb: str, name: str) -> LockNotOwnedError:
    return LockNotOwnedError(f"Cannot {verb} a lock that's no longer owned", name)


class Lock(_LockBase, Scoped):
    """A redis-py-shaped lock on ``name`` (see the module's text).

    Args:
        client: the :class:`raftlock.Client` to use.
        name: the lock's name.
        timeout: seconds the lock lives after each acquire, extend or
            reacquire (``None``: while the process lives).
        sleep: accepted for compatibility; the server queues waiters.
        blocking: whether ``acquire`` waits by default.
        blocking_timeout: default seconds ``acquire`` waits (``None``: for ever).
        thread_local: keep the token per thread (redis-py's default), so one
            thread cannot release another's lock.
    """

    client: Client

    def acquire(
        self,
        blocking: bool | None = None,
        blocking_timeout: float | None = None,
        token: str | bytes | None = None,
    ) -> bool:
        """Takes the lock; ``False`` if it is busy (``blocking=False``) or
        ``blocking_timeout`` seconds pass first."""
        token, wait, limit = self._begin(blocking, blocking_timeout, token)
        native = self.client._native
        if self.timeout is not None:
            held = _own_ttl.acquire(native, self.name, token, float(self.timeout), wait, limit)
        else:
            lease = self.client.session_lease()
            try:
                granted = native.acquire_on(self.name, token, lease, wait, limit)
            except Timeout:
                granted = None
            held = None if granted is None else (lease, granted[0])
        if held is None:
            return False
        self._record(token, *held)
        return True

    def release(self) -> None:
        """Releases the lock; raises :class:`LockNotOwnedError` if it was
        no longer held (expired, or taken by another since)."""
        token, lease = self._end()
        try:
            if lease is not None:
                if _own_ttl.revoke(self.client._native, lease) == 0:
                    raise _not_owned("release", self.name)
            else:
                self.client._native.release_on(self.name, token)
        except NotHeld as e:
            raise _not_owned("release", self.name) from e

    def extend(self, additional_time: float, replace_ttl: bool = False) -> bool:
        """Adds ``additional_time`` seconds to the time the lock has left
        (or, with ``replace_ttl``, sets it to that)."""
        lease, left = self._time_left("extend")
        ttl = ttl_seconds(
            "additional_time", additional_time if replace_ttl else left + additional_time
        )
        self.client.set_lease_ttl(lease, ttl)
        return True

    def reacquire(self) -> bool:
        """Resets the time the lock has left to ``timeout``."""
        lease, _ = self._time_left("reacquire")
        self.client.set_lease_ttl(lease, float(self.timeout or 0))
        return True

    def locked(self) -> bool:
        """Whether anyone holds the lock."""
        info = self.client.describe(self.name)
        return info is not None and bool(info.holders)

    def owned(self) -> bool:
        """Whether this lock's token holds it."""
        return self.local.token is not None and self._holds(self.client.describe(self.name))

    def _time_left(self, verb: str) -> tuple[int, float]:
        token, lease = self._own(verb)
        try:
            ttl = self.client.time_to_live(lease)
        except LeaseExpired as e:
            raise _not_owned(verb, self.name) from e
        return lease, self._left(verb, token, ttl)

    def __enter__(self) -> Lock:
        if self.acquire():
            return self
        raise LockError("Unable to acquire lock within the time specified", self.name)

    def _on_exit(self) -> None:
        self.release()


class AsyncLock(_LockBase, AsyncScoped):
    """:class:`Lock` for asyncio, as redis-py's ``redis.asyncio.lock.Lock``:
    the same arguments, with a :class:`raftlock.asyncio.Client`, and the
    same methods, awaited (``async with``)."""

    client: AsyncClient

    async def acquire(
        self,
        blocking: bool | None = None,
        blocking_timeout: float | None = None,
        token: str | bytes | None = None,
    ) -> bool:
        """Takes the lock; ``False`` if it is busy or ``blocking_timeout`` passes."""
        token, wait, limit = self._begin(blocking, blocking_timeout, token)
        native = self.client._native
        if self.timeout is not None:
            held = await _own_ttl.acquire_async(
                native, self.name, token, float(self.timeout), wait, limit
            )
        else:
            lease = await self.client.session_lease()
            try:
                granted = await native.acquire_on(self.name, token, lease, wait, limit, aio=True)
            except Timeout:
                granted = None
            held = None if granted is None else (lease, granted[0])
        if held is None:
            return False
        self._record(token, *held)
        return True

    async def release(self) -> None:
        """Releases the lock; :class:`LockNotOwnedError` if no longer held."""
        token, lease = self._end()
        try:
            if lease is not None:
                if await _own_ttl.revoke_async(self.client._native, lease) == 0:
                    raise _not_owned("release", self.name)
            else:
                await self.client._native.release_on(self.name, token, aio=True)
        except NotHeld as e:
            raise _not_owned("release", self.name) from e

    async def extend(self, additional_time: float, replace_ttl: bool = False) -> bool:
        """Adds ``additional_time`` seconds to the time the lock has left
        (or, with ``replace_ttl``, sets it to that)."""
        lease, left = await self._time_left("extend")
        ttl = ttl_seconds(
            "additional_time", additional_time if replace_ttl else left + additional_time
        )
        await self.client.set_lease_ttl(lease, ttl)
        return True

    async def reacquire(self) -> bool:
        """Resets the time the lock has left to ``timeout``."""
        lease, _ = await self._time_left("reacquire")
        await self.client.set_lease_ttl(lease, float(self.timeout or 0))
        return True

    async def locked(self) -> bool:
        """Whether anyone holds the lock."""
        info = await self.client.describe(self.name)
        return info is not None and bool(info.holders)

    async def owned(self) -> bool:
        """Whether this lock's token holds it."""
        return self.local.token is not None and self._holds(await self.client.describe(self.name))

    async def _time_left(self, verb: str) -> tuple[int, float]:
        token, lease = self._own(verb)
        try:
            ttl = await self.client.time_to_live(lease)
        except LeaseExpired as e:
            raise _not_owned(verb, self.name) from e
        return lease, self._left(verb, token, ttl)

    async def __aenter__(self) -> AsyncLock:
        if await self.acquire():
            return self
        raise LockError("Unable to acquire lock within the time specified", self.name)

    async def _on_exit(self) -> None:
        await self.release()


__all__ = ["AsyncLock", "Lock", "LockError", "LockNotOwnedError"]
