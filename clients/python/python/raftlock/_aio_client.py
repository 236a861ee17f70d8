"""The asyncio client and its locks (:class:`Client`, :class:`Lock`,
:class:`Semaphore`, :class:`RwLock`, :class:`Fenced`), which
:mod:`raftlock.asyncio` gives users."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from raftlock import _native
from raftlock._aio_leadership import (
    Election,
    LeaderElection,
    Leadership,
    TaskGuard,
    TaskLock,
)
from raftlock._base import (
    ClientBase,
    LockBase,
    LockOptions,
    OnLost,
    SemaphoreBase,
    checked_ttl,
    on_lost_loop,
)
from raftlock._common import wait_limit
from raftlock._native import LeaseTtl, LockInfo
from raftlock._scope import AsyncScoped
from raftlock.errors import LockLost, NotHeld, Timeout

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

T = TypeVar("T")
R = TypeVar("R")


class AioLockOptions(LockOptions, total=False):
    """The keywords of an asyncio lock (see :class:`Lock`)."""

    abort_on_loss: bool


class Client(ClientBase, AsyncScoped):
    """A connection to a raftlock cluster, for asyncio. The arguments are
    those of :class:`raftlock.Client`."""

    def lock(self, name: str, **options: Unpack[AioLockOptions]) -> Lock:
        """An exclusive lock on ``name``; the keywords are :class:`Lock`'s."""
        return Lock(self, name, **options)

    def semaphore(
        self, name: str, limit: int, *, ttl: float | None = None, timeout: float | None = None
    ) -> Semaphore:
        """A counting semaphore of ``limit`` permits on ``name``."""
        return Semaphore(self, name, limit, ttl=ttl, timeout=timeout)

    def rwlock(
        self, name: str, *, ttl: float | None = None, timeout: float | None = None
    ) -> RwLock:
        """A read-write lock on ``name``."""
        return RwLock(self, name, ttl=ttl, timeout=timeout)

    def task_lock(self, name: str, min_hold: float, max_hold: float) -> TaskLock:
        """A lock that lets a scheduled job run once across replicas."""
        return TaskLock(self, name, min_hold, max_hold)

    def election(self, name: str, *, timeout: float | None = None) -> Election:
        """Election ``name``: campaign, observe, find the leader."""
        return Election(self, name, timeout=timeout)

    def leader_election(self, name: str, value: bytes | str = b"") -> LeaderElection:
        """A background campaign in election ``name``."""
        return LeaderElection(self, name, value)

    async def check(self, name: str, fence: int) -> bool:
        """Whether ``fence`` is still the fencing token of a live hold of ``name``."""
        return bool(await self._native.check(name, fence, aio=True))

    async def describe(self, name: str) -> LockInfo | None:
        """Lock ``name`` with its holders and waiters; ``None`` if unused."""
        info: LockInfo | None = await self._native.describe(name, aio=True)
        return info

    async def list_locks(self, prefix: str = "", limit: int = 0) -> list[LockInfo]:
        """Locks whose names start with ``prefix`` (``limit`` 0: all)."""
        locks: list[LockInfo] = await self._native.list(prefix, limit, aio=True)
        return locks

    async def force_release(self, name: str) -> int:
        """Operator override: ends every hold of ``name``; answers how many."""
        return int(await self._native.force_release(name, aio=True))

    async def grant_lease(self, ttl: float) -> int:
        """Grants a lease of ``ttl`` seconds (0.001 to 86 400); answers its id."""
        return int(await self._native.grant_lease(checked_ttl(ttl), aio=True))

    async def keep_alive(self, lease: int) -> float:
        """Renews a lease once; answers its TTL."""
        return float(await self._native.keep_alive(lease, aio=True))

    async def revoke(self, lease: int) -> int:
        """Revokes a lease; answers how many holds ended with it."""
        return int(await self._native.revoke(lease, aio=True))

    async def set_lease_ttl(self, lease: int, ttl: float) -> float:
        """Gives a lease the TTL ``ttl`` from now (replicated)."""
        return float(await self._native.set_lease_ttl(lease, checked_ttl(ttl), aio=True))

    async def time_to_live(self, lease: int) -> LeaseTtl:
        """A lease's TTL, the time it has left and what it holds."""
        ttl: LeaseTtl = await self._native.time_to_live(lease, aio=True)
        return ttl

    async def session_lease(self) -> int:
        """The session lease's id, granting the session now if needed."""
        return int(await self._native.session_lease(aio=True))

    async def close(self) -> None:
        """Ends the session: revokes its lease, releasing its locks. First
        waits (within the retry budget) for the background releases of
        cancelled acquires and of dropped holds."""
        await self._native.close(aio=True)

    async def _on_exit(self) -> None:
        await self.close()


class Lock(LockBase):
    """A lock on ``name``, for asyncio: see :class:`raftlock.Lock`.

    ``abort_on_loss=True`` cancels the task that acquired the lock when the
    lock is lost; leaving ``async with`` then raises
    :class:`~raftlock.LockLost` instead of the cancellation.
    """

    def __init__(
        self,
        client: Client,
        name: str,
        *,
        ttl: float | None = None,
        timeout: float | None = None,
        owner: str | None = None,
        lock_delay: float | None = None,
        on_lost: OnLost | None = None,
        abort_on_loss: bool = False,
        _mode: str = "exclusive",
        _permits: int = 1,
        _limit: int = 0,
    ) -> None:
        super().__init__(
            name,
            ttl=ttl,
            timeout=timeout,
            owner=owner,
            lock_delay=lock_delay,
            mode=_mode,
            permits=_permits,
            limit=_limit,
        )
        self._client = client
        self._on_lost = on_lost
        self._abort_on_loss = abort_on_loss
        # The current hold's loss event: made with the hold when a callback
        # or abort_on_loss needs it, otherwise on first use of ``lost``
        # (most holds never look, and a watcher per hold costs).
        self._lost: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _start(
        self, blocking: bool, timeout: float | None
    ) -> tuple[Awaitable[Any], bool, asyncio.Event | None]:
        """The native call of one acquire; whether it takes a fresh hold
        (not a re-entry); the fresh hold's loss event, if made now."""
        blocking, wait = wait_limit(blocking, timeout, self._timeout)
        top = self._held_top()
        if top is not None:
            return top.reenter(aio=True), False, None
        if self._on_lost is None and not self._abort_on_loss:
            lost = on_lost = None
        else:
            lost = asyncio.Event()
            task = asyncio.current_task() if self._abort_on_loss else None
            on_lost = on_lost_loop(lost, self._on_lost, task)
        call = self._client._native.lock(
            *self._lock_args(wait, blocking), on_lost=on_lost, aio=True
        )
        return call, True, lost

    def _granted(self, guard: _native.NativeGuard, lost: asyncio.Event | None) -> None:
        """A fresh hold was granted: its loss event is the current one."""
        self._lost = lost
        self._hold = guard
        self._loop = asyncio.get_running_loop()

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes the lock (or one more level of it); ``False`` if busy
        (``blocking=False``) or after ``timeout`` seconds."""
        call, fresh, lost = self._start(blocking, timeout)
        if fresh:
            try:
                guard = await call
            except Timeout:
                return False
            if guard is None:
                return False
            self._granted(guard, lost)
        else:
            guard = await call
        try:
            guard.ensure_valid()
        except LockLost:
            with contextlib.suppress(LockLost):
                await guard.release(aio=True)
            raise
        self._push(guard)
        return True

    async def release(self) -> None:
        """Releases one level; raises :class:`~raftlock.LockLost` if the
        hold had been lost meanwhile."""
        await self._releasing(self._pop()).release(aio=True)

    def _releasing(self, guard: _native.NativeGuard) -> _native.NativeGuard:
        """``guard``, about to be released: the hold's loss is kept for
        ``lost`` if nobody made its event yet."""
        if guard is self._hold:
            self._hold = None
            if self._lost is None and guard.is_lost():
                self._lost = asyncio.Event()
                self._lost.set()
        return guard

    async def locked(self) -> bool:
        """Whether anyone holds the lock now (asks the cluster)."""
        info = await self._client.describe(self.name)
        return info is not None and bool(info.holders)

    async def owned(self) -> bool:
        """Whether this object holds the lock, proven now (one round trip;
        see :meth:`raftlock.Lock.owned`). Awaited, as redis-py's asyncio
        ``owned()``; :attr:`held` answers with no call."""
        try:
            await self.ensure_owned()
        except (LockLost, NotHeld):
            return False
        return True

    async def ensure_owned(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the cluster confirms,
        now, that this object holds the lock (one round trip)."""
        await self._top().ensure_owned(aio=True)

    @property
    def lost(self) -> asyncio.Event:
        """Set when the current hold is lost (``await lock.lost.wait()``)."""
        lost = self._lost
        if lost is None:
            lost = self._lost = asyncio.Event()
            hold = self._hold
            if hold is not None and self._loop is not None:
                with contextlib.suppress(NotHeld):
                    hold.on_lost(on_lost_loop(lost, None, loop=self._loop))
        return lost

    async def __aenter__(self) -> Lock:
        if not await self.acquire():
            raise Timeout(f"lock {self.name!r} was not granted within {self._timeout}s")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        aborted = (
            self._abort_on_loss
            and isinstance(exc, asyncio.CancelledError)
            and self._lost is not None
            and self._lost.is_set()
        )
        try:
            # release(), inline.
            await self._releasing(self._pop()).release(aio=True)
        except LockLost as lost:
            if aborted:
                _uncancel()
            raise lost from exc
        if aborted:
            _uncancel()
            raise LockLost(f"lock {self.name!r} was lost; its task was cancelled") from exc


def _uncancel() -> None:
    """Takes back the cancellation this module made (3.11+), so the
    task's caller sees the LockLost raised instead."""
    task = asyncio.current_task()
    if task is not None and sys.version_info >= (3, 11):
        task.uncancel()


class Semaphore(SemaphoreBase, AsyncScoped):
    """A counting semaphore of ``limit`` permits, for asyncio."""

    def __init__(
        self,
        client: Client,
        name: str,
        limit: int,
        *,
        ttl: float | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name, limit, ttl=ttl, timeout=timeout)
        self._client = client

    async def acquire(
        self, blocking: bool = True, timeout: float | None = None, permits: int = 1
    ) -> bool:
        """Takes ``permits`` permits; ``False`` if busy or timed out."""
        hold = Lock(
            self._client,
            self.name,
            ttl=self._ttl,
            timeout=self._timeout,
            _mode="permits",
            _permits=permits,
            _limit=self.limit,
        )
        if not await hold.acquire(blocking, timeout):
            return False
        self._held.append(hold)
        return True

    async def release(self) -> None:
        """Gives back the permits of the last acquire."""
        await self._last(pop=True).release()

    async def __aenter__(self) -> Semaphore:
        if not await self.acquire():
            raise Timeout(f"semaphore {self.name!r}: no permit within {self._timeout}s")
        return self

    async def _on_exit(self) -> None:
        await self.release()


class RwLock:
    """A read-write lock, for asyncio."""

    def __init__(
        self, client: Client, name: str, *, ttl: float | None = None, timeout: float | None = None
    ) -> None:
        self._client = client
        self.name = name
        self._ttl = ttl
        self._timeout = timeout

    def read(self, *, owner: str | None = None) -> Lock:
        """A shared hold (``async with rw.read(): ...``)."""
        return Lock(
            self._client,
            self.name,
            ttl=self._ttl,
            timeout=self._timeout,
            owner=owner,
            _mode="shared",
        )

    def write(self, *, owner: str | None = None) -> Lock:
        """An exclusive hold."""
        return Lock(self._client, self.name, ttl=self._ttl, timeout=self._timeout, owner=owner)


class Fenced(Generic[T]):
    """A resource used only while a lock holds (see :class:`raftlock.Fenced`):
    each write first asks the cluster whether the hold still holds (one
    round trip); ``fn`` may be a coroutine function."""

    def __init__(self, hold: Lock | Leadership | TaskGuard, resource: T) -> None:
        self._hold = hold
        self.resource = resource

    async def write(self, fn: Callable[[T, int], Awaitable[R] | R]) -> R:
        """``fn(resource, fence)``, awaited if it is a coroutine, if the
        cluster confirms the hold now; otherwise :class:`~raftlock.LockLost`
        and ``fn`` is not called."""
        await self._hold.ensure_owned()
        result = fn(self.resource, self._hold.fence)
        if asyncio.iscoroutine(result):
            awaited: R = await result
            return awaited
        return result  # type: ignore[return-value]
