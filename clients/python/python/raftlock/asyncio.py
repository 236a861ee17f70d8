"""The asyncio API: the same names as :mod:`raftlock`, awaited.

``async with client.lock("jobs/nightly"):`` takes and releases a lock;
``abort_on_loss=True`` cancels the task that holds a lock when the lock is
lost, as watchdog-renewed Redis locks do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from os import PathLike
from types import TracebackType
from typing import Any, Generic, TypeVar

from raftlock import _native
from raftlock._common import as_bytes, endpoints_from, seconds, wait_limit
from raftlock._native import LeaderInfo, LeaseTtl, LockInfo
from raftlock.errors import LockLost, NotHeld, RaftlockError, Timeout

T = TypeVar("T")
R = TypeVar("R")

#: ``on_lost`` callbacks get the reason as text; they run on the event loop.
OnLost = Callable[[str], object]


class Client:
    """A connection to a raftlock cluster, for asyncio. The arguments are
    those of :class:`raftlock.Client`."""

    def __init__(
        self,
        endpoints: str | Sequence[str] | None = None,
        *,
        session_ttl: float | None = None,
        safety_margin: float | None = None,
        retry_for: float | None = None,
        token: str | None = None,
        cacert: str | PathLike[str] | None = None,
        cert: str | PathLike[str] | None = None,
        key: str | PathLike[str] | None = None,
    ) -> None:
        self._native = _native.NativeClient(
            endpoints_from(endpoints),
            session_ttl=seconds("session_ttl", session_ttl),
            safety_margin=seconds("safety_margin", safety_margin),
            retry_for=seconds("retry_for", retry_for),
            token=token if token is not None else os.environ.get("RAFTLOCK_TOKEN"),
            cacert=cacert,
            cert=cert,
            key=key,
        )

    @classmethod
    def _wrap(cls, native: _native.NativeClient) -> Client:
        client = cls.__new__(cls)
        client._native = native
        return client

    @property
    def endpoints(self) -> list[str]:
        """The endpoints this client uses."""
        return self._native.endpoints

    def lock(
        self,
        name: str,
        *,
        ttl: float | None = None,
        timeout: float | None = None,
        owner: str | None = None,
        lock_delay: float | None = None,
        on_lost: OnLost | None = None,
        abort_on_loss: bool = False,
    ) -> Lock:
        """An exclusive lock on ``name`` (see :class:`Lock`)."""
        return Lock(
            self,
            name,
            ttl=ttl,
            timeout=timeout,
            owner=owner,
            lock_delay=lock_delay,
            on_lost=on_lost,
            abort_on_loss=abort_on_loss,
        )

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
        return int(await self._native.grant_lease(_ttl(ttl), aio=True))

    async def keep_alive(self, lease: int) -> float:
        """Renews a lease once; answers its TTL."""
        return float(await self._native.keep_alive(lease, aio=True))

    async def revoke(self, lease: int) -> int:
        """Revokes a lease; answers how many holds ended with it."""
        return int(await self._native.revoke(lease, aio=True))

    async def set_lease_ttl(self, lease: int, ttl: float) -> float:
        """Gives a lease the TTL ``ttl`` from now (replicated)."""
        return float(await self._native.set_lease_ttl(lease, _ttl(ttl), aio=True))

    async def time_to_live(self, lease: int) -> LeaseTtl:
        """A lease's TTL, the time it has left and what it holds."""
        ttl: LeaseTtl = await self._native.time_to_live(lease, aio=True)
        return ttl

    async def session_lease(self) -> int:
        """The session lease's id, granting the session now if needed."""
        return int(await self._native.session_lease(aio=True))

    async def close(self) -> None:
        """Ends the session: revokes its lease, releasing its locks."""
        await self._native.close(aio=True)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _ttl(ttl: float) -> float:
    checked = seconds("ttl", ttl)
    assert checked is not None
    return checked


def _notify(
    event: asyncio.Event,
    callback: OnLost | None,
    task: asyncio.Task[Any] | None = None,
) -> Callable[[str], None]:
    """The native loss callback (on a client thread): sets ``event``, runs
    ``callback`` and cancels ``task``, on the loop they belong to."""
    loop = asyncio.get_running_loop()
    # Callbacks' tasks, kept referenced until done (the loop holds them weakly).
    running: set[asyncio.Task[Any]] = set()

    def on_loop(reason: str) -> None:
        event.set()
        if task is not None and not task.done():
            task.cancel(f"raftlock: lock lost: {reason}")
        if callback is not None:
            result = callback(reason)
            if asyncio.iscoroutine(result):
                job = loop.create_task(result)
                running.add(job)
                job.add_done_callback(running.discard)

    def lost(reason: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(on_loop, reason)

    return lost


class Lock:
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
        self._client = client
        self.name = name
        self.owner = owner if owner is not None else str(uuid.uuid4())
        self._ttl = seconds("ttl", ttl)
        self._timeout = seconds("timeout", timeout)
        self._lock_delay = None if lock_delay is None else float(lock_delay)
        self._on_lost = on_lost
        self._abort_on_loss = abort_on_loss
        self._mode = _mode
        self._permits = _permits
        self._limit = _limit
        self._guards: list[_native.NativeGuard] = []
        self._lost = asyncio.Event()

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes the lock (or one more level of it); ``False`` if busy
        (``blocking=False``) or after ``timeout`` seconds."""
        wait = wait_limit(blocking, timeout, self._timeout)
        top = self._guards[-1] if self._guards else None
        if top is not None and top.is_held():
            top.ensure_valid()  # never re-enter a hold that is already lost
            guard: _native.NativeGuard = await top.reenter(aio=True)
        else:
            try:
                guard = await self._client._native.lock(
                    self.name,
                    self._ttl,
                    wait,
                    blocking,
                    self._mode,
                    self._permits,
                    self._limit,
                    self.owner,
                    self._lock_delay,
                    aio=True,
                )
            except Timeout:
                return False
            if guard is None:
                return False
            self._lost = asyncio.Event()
            task = asyncio.current_task() if self._abort_on_loss else None
            guard.on_lost(_notify(self._lost, self._on_lost, task))
        await _valid_or_release(guard)
        self._guards.append(guard)
        return True

    async def release(self) -> None:
        """Releases one level; raises :class:`~raftlock.LockLost` if the
        hold had been lost meanwhile."""
        if not self._guards:
            raise NotHeld(f"lock {self.name!r} is not held by this object")
        guard = self._guards.pop()
        await guard.release(aio=True)

    async def locked(self) -> bool:
        """Whether anyone holds the lock now (asks the cluster)."""
        info = await self._client.describe(self.name)
        return info is not None and bool(info.holders)

    def owned(self) -> bool:
        """Whether this object holds the lock and can prove it still valid."""
        try:
            self.ensure_valid()
        except (LockLost, NotHeld):
            return False
        return True

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the hold can be trusted now."""
        self._top().ensure_valid()

    @property
    def fence(self) -> int:
        """The fencing token of the current hold."""
        return self._top().fence

    @property
    def lease(self) -> int:
        """The lease the current hold is on."""
        return self._top().lease

    @property
    def lost(self) -> asyncio.Event:
        """Set when the current hold is lost (``await lock.lost.wait()``)."""
        return self._lost

    def _top(self) -> _native.NativeGuard:
        if not self._guards:
            raise NotHeld(f"lock {self.name!r} is not held by this object")
        return self._guards[-1]

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
            self._abort_on_loss and isinstance(exc, asyncio.CancelledError) and self._lost.is_set()
        )
        try:
            await self.release()
        except LockLost as lost:
            if aborted:
                _uncancel()
            raise lost from exc
        if aborted:
            _uncancel()
            raise LockLost(f"lock {self.name!r} was lost; its task was cancelled") from exc

    def __repr__(self) -> str:
        return f"<raftlock.asyncio.Lock {self.name!r} owner={self.owner!r}>"


def _uncancel() -> None:
    """Takes back the cancellation this module made (3.11+), so the
    task's caller sees the LockLost raised instead."""
    task = asyncio.current_task()
    if task is not None and sys.version_info >= (3, 11):
        task.uncancel()


async def _valid_or_release(guard: _native.NativeGuard) -> None:
    try:
        guard.ensure_valid()
    except LockLost:
        with contextlib.suppress(LockLost):
            await guard.release(aio=True)
        raise


class Semaphore:
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
        self._client = client
        self.name = name
        self.limit = limit
        self._ttl = ttl
        self._timeout = timeout
        self._held: list[Lock] = []

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
        if not self._held:
            raise NotHeld(f"semaphore {self.name!r} holds no permits here")
        await self._held.pop().release()

    @property
    def fence(self) -> int:
        """The fencing token of the last acquire."""
        if not self._held:
            raise NotHeld(f"semaphore {self.name!r} holds no permits here")
        return self._held[-1].fence

    async def __aenter__(self) -> Semaphore:
        if not await self.acquire():
            raise Timeout(f"semaphore {self.name!r}: no permit within {self._timeout}s")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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


class TaskGuard:
    """A held task lock, for asyncio."""

    def __init__(self, guard: _native.NativeTaskGuard) -> None:
        self._guard = guard
        self.lost = asyncio.Event()
        guard.on_lost(_notify(self.lost, None))

    @property
    def fence(self) -> int:
        """The fencing token of this run."""
        return self._guard.fence

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the hold is still good."""
        self._guard.ensure_valid()

    async def finish(self) -> None:
        """The job is done: waits out ``min_hold``, then releases."""
        await self._guard.finish(aio=True)

    async def __aenter__(self) -> TaskGuard:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.finish()


class TaskLock:
    """Lets a scheduled job run once across replicas (see :class:`raftlock.TaskLock`)."""

    def __init__(self, client: Client, name: str, min_hold: float, max_hold: float) -> None:
        self._client = client
        self.name = name
        self.min_hold = _ttl(min_hold)
        self.max_hold = _ttl(max_hold)

    async def try_acquire(self) -> TaskGuard | None:
        """Takes the lock if no worker holds it."""
        guard = await self._client._native.task_lock(
            self.name, self.min_hold, self.max_hold, aio=True
        )
        return None if guard is None else TaskGuard(guard)

    async def run(self, job: Callable[..., Awaitable[object]], *args: Any, **kwargs: Any) -> bool:
        """Awaits ``job(*args, **kwargs)`` if this worker got the lock;
        answers whether it ran."""
        guard = await self.try_acquire()
        if guard is None:
            return False
        async with guard:
            guard.ensure_valid()
            await job(*args, **kwargs)
        return True


class Leadership:
    """Leadership of an election, for asyncio."""

    def __init__(self, native: _native.NativeLeadership) -> None:
        self._native = native
        self.lost = asyncio.Event()
        native.on_lost(_notify(self.lost, None))

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def fence(self) -> int:
        """The leadership's fencing token (its term)."""
        return self._native.fence

    @property
    def is_leader(self) -> bool:
        """Whether this still leads, as far as the client can prove."""
        try:
            self._native.ensure_valid()
        except (LockLost, NotHeld):
            return False
        return True

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless leadership is still good."""
        self._native.ensure_valid()

    async def proclaim(self, value: bytes | str) -> None:
        """Publishes a new value as leader."""
        await self._native.proclaim(as_bytes(value), aio=True)

    async def resign(self) -> None:
        """Steps down; the next candidate is elected."""
        await self._native.resign(aio=True)

    async def __aenter__(self) -> Leadership:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._native.is_held():
            await self.resign()


class Election:
    """An election, for asyncio."""

    def __init__(self, client: Client, name: str, *, timeout: float | None = None) -> None:
        self._client = client
        self.name = name
        self._timeout = seconds("timeout", timeout)

    async def campaign(self, value: bytes | str = b"", timeout: float | None = None) -> Leadership:
        """Waits (FIFO) until elected; publishes ``value``."""
        wait = self._timeout if timeout is None else seconds("timeout", timeout)
        native = await self._client._native.campaign(self.name, as_bytes(value), wait, aio=True)
        return Leadership(native)

    async def leader(self) -> LeaderInfo | None:
        """The current leader, if any."""
        info: LeaderInfo | None = await self._client._native.leader(self.name, aio=True)
        return info

    async def observe(self) -> AsyncIterator[LeaderInfo | None]:
        """Each leader from now on (``None`` while there is none)."""
        observer = self._client._native.observe(self.name)
        while True:
            more, leader = await observer.next(aio=True)
            if not more:
                return
            yield leader


class LeaderElection:
    """Campaigns in the background: :attr:`is_leader` says whether this
    process leads now; when leadership is lost, it campaigns again.

    ``async with client.leader_election("scheduler") as election:``
    """

    #: Seconds between campaigns after an error (no quorum, unreachable).
    RETRY = 0.5

    def __init__(self, client: Client, name: str, value: bytes | str = b"") -> None:
        self._election = Election(client, name)
        self._value = as_bytes(value)
        self._leadership: Leadership | None = None
        self._task: asyncio.Task[None] | None = None
        self._elected = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        """Whether this process leads now, as far as the client can prove."""
        leadership = self._leadership
        return leadership is not None and leadership.is_leader

    @property
    def fence(self) -> int:
        """The fencing token of the current leadership."""
        leadership = self._leadership
        if leadership is None:
            raise NotHeld(f"not the leader of {self._election.name!r}")
        return leadership.fence

    def start(self) -> None:
        """Starts campaigning in the background (on the running loop)."""
        if self._task is None:
            self._elected = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stops campaigning and resigns if leading."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        leadership, self._leadership = self._leadership, None
        if leadership is not None and leadership._native.is_held():
            with contextlib.suppress(RaftlockError):
                await leadership.resign()

    async def wait_for_leader(self, timeout: float | None = None) -> bool:
        """Waits until this process leads; ``False`` after ``timeout``."""
        try:
            await asyncio.wait_for(self._elected.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return self.is_leader

    async def _run(self) -> None:
        while True:
            try:
                leadership = await self._election.campaign(self._value)
            except RaftlockError:
                await asyncio.sleep(self.RETRY)
                continue
            self._leadership = leadership
            self._elected.set()
            await leadership.lost.wait()
            self._elected.clear()
            self._leadership = None

    async def __aenter__(self) -> LeaderElection:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


class Fenced(Generic[T]):
    """A resource used only while a lock holds (see :class:`raftlock.Fenced`);
    ``fn`` may be a coroutine function."""

    def __init__(self, hold: Lock | Leadership | TaskGuard, resource: T) -> None:
        self._hold = hold
        self.resource = resource

    async def write(self, fn: Callable[[T, int], Awaitable[R] | R]) -> R:
        """``fn(resource, fence)``, awaited if it is a coroutine, if the
        hold is still valid."""
        self._hold.ensure_valid()
        result = fn(self.resource, self._hold.fence)
        if asyncio.iscoroutine(result):
            awaited: R = await result
            return awaited
        return result  # type: ignore[return-value]


__all__ = [
    "Client",
    "Election",
    "Fenced",
    "LeaderElection",
    "Leadership",
    "Lock",
    "RwLock",
    "Semaphore",
    "TaskGuard",
    "TaskLock",
]
