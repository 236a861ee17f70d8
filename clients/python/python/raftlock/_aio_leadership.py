"""Leadership and scheduled jobs for asyncio: the same names as
:mod:`raftlock._sync_leadership`, awaited."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from raftlock import _native
from raftlock._base import (
    ClientBase,
    LeadershipBase,
    TaskGuardBase,
    checked_ttl,
    on_lost_loop,
)
from raftlock._common import as_bytes, elected, wait_seconds
from raftlock._native import LeaderInfo
from raftlock._scope import AsyncScoped
from raftlock.errors import NotHeld, RaftlockError


class TaskGuard(TaskGuardBase, AsyncScoped):
    """A held task lock, for asyncio."""

    def __init__(self, guard: _native.NativeTaskGuard) -> None:
        super().__init__(guard)
        self.lost = asyncio.Event()
        guard.on_lost(on_lost_loop(self.lost, None))

    async def finish(self) -> None:
        """The job is done; returns without waiting for ``min_hold``, and
        the lock stays held until then; raises :class:`~raftlock.LockLost`
        if the hold had ended before (see :meth:`raftlock.TaskGuard.finish`)."""
        await self._guard.finish(aio=True)

    async def ensure_owned(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the cluster confirms
        the hold now (one round trip, see :meth:`raftlock.Lock.ensure_owned`)."""
        await self._guard.ensure_owned(aio=True)

    async def _on_exit(self) -> None:
        await self.finish()


class TaskLock:
    """Lets a scheduled job run once across replicas (see :class:`raftlock.TaskLock`)."""

    def __init__(self, client: ClientBase, name: str, min_hold: float, max_hold: float) -> None:
        self._client = client
        self.name = name
        self.min_hold = checked_ttl(min_hold)
        self.max_hold = checked_ttl(max_hold)

    async def try_acquire(self) -> TaskGuard | None:
        """Takes the lock if no worker holds it."""
        guard = await self._client._native.task_lock(
            self.name, self.min_hold, self.max_hold, aio=True
        )
        return None if guard is None else TaskGuard(guard)

    async def run(self, job: Callable[..., Awaitable[object]], *args: Any, **kwargs: Any) -> bool:
        """Awaits ``job(*args, **kwargs)`` if this worker got the lock;
        answers whether it ran. Returns as soon as the job ends; the lock
        stays held until ``min_hold`` has passed since it was taken, even
        if the interpreter exits first. ``True`` means the whole job ran
        under the lock; a job whose lock was lost before it ended raises
        :class:`~raftlock.LockLost` once it ends (see
        :meth:`raftlock.TaskLock.run`)."""
        guard = await self.try_acquire()
        if guard is None:
            return False
        async with guard:
            guard.ensure_valid()
            await job(*args, **kwargs)
        return True


class Leadership(LeadershipBase, AsyncScoped):
    """Leadership of an election, for asyncio."""

    def __init__(self, native: _native.NativeLeadership) -> None:
        super().__init__(native)
        self.lost = asyncio.Event()
        native.on_lost(on_lost_loop(self.lost, None))

    async def proclaim(self, value: bytes | str) -> None:
        """Publishes a new value as leader."""
        await self._native.proclaim(as_bytes(value), aio=True)

    async def ensure_owned(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the cluster confirms
        the leadership now (one round trip, see
        :meth:`raftlock.Lock.ensure_owned`)."""
        await self._native.ensure_owned(aio=True)

    async def resign(self) -> None:
        """Steps down; the next candidate is elected."""
        await self._native.resign(aio=True)

    async def _on_exit(self) -> None:
        if self._native.is_held():
            await self.resign()


class Election:
    """An election, for asyncio."""

    def __init__(self, client: ClientBase, name: str, *, timeout: float | None = None) -> None:
        self._client = client
        self.name = name
        self._timeout = wait_seconds("timeout", timeout)

    async def campaign(self, value: bytes | str = b"", timeout: float | None = None) -> Leadership:
        """Waits (FIFO) until elected; publishes ``value`` (see
        :meth:`raftlock.Election.campaign`; ``timeout=0`` is one try)."""
        wait = self._timeout if timeout is None else wait_seconds("timeout", timeout)
        native = await self._client._native.campaign(self.name, as_bytes(value), wait, aio=True)
        return Leadership(elected(self.name, native))

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


class LeaderElection(AsyncScoped):
    """Campaigns in the background: :attr:`is_leader` says whether this
    process leads now; when leadership is lost, it campaigns again.

    ``async with client.leader_election("scheduler") as election:``
    """

    #: Seconds between campaigns after an error (no quorum, unreachable).
    RETRY = 0.5

    def __init__(self, client: ClientBase, name: str, value: bytes | str = b"") -> None:
        self._election = Election(client, name)
        self._value = as_bytes(value)
        self._leadership: Leadership | None = None
        self._task: asyncio.Task[None] | None = None
        self._elected = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        """Whether this process leads now as far as it knows, with no call:
        a force-release or revoke made elsewhere shows after the next
        keep-alive round (a third of the session TTL)."""
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
        """Stops campaigning and resigns if leading. Through a client of
        a node of this process (``node.client()``) the resign waits at
        most 0.5 s: with no quorum left (every replica stopping at once)
        the leadership ends when its session's TTL runs out."""
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

    async def _on_exit(self) -> None:
        await self.stop()
