"""Blocking leadership and scheduled jobs: :class:`Election` and its
:class:`Leadership`, :class:`LeaderElection` in the background, and
:class:`TaskLock` for a job that runs once across replicas."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from raftlock import _native
from raftlock._base import (
    ClientBase,
    LeadershipBase,
    TaskGuardBase,
    checked_ttl,
    on_lost_thread,
)
from raftlock._common import as_bytes, elected, wait_seconds
from raftlock._native import LeaderInfo
from raftlock._scope import Scoped


class TaskGuard(TaskGuardBase, Scoped):
    """A held task lock; :meth:`finish` (or leaving ``with``) ends this
    worker's part at once, and the lock stays held until ``min_hold`` has
    passed since it was taken."""

    def __init__(self, guard: _native.NativeTaskGuard) -> None:
        super().__init__(guard)
        self.lost = threading.Event()
        guard.on_lost(on_lost_thread(self.lost, None))

    def finish(self) -> None:
        """The job is done; returns without waiting for ``min_hold``.

        If ``min_hold`` has passed since the lock was taken, it is released
        now. Otherwise it stays held until then: its lease's TTL is cut to
        the time left, so the cluster ends the hold at ``min_hold`` by
        itself, and this client releases it at that moment too while the
        process runs. An interpreter that exits before then does not
        shorten the hold: the cluster still ends it at ``min_hold`` (at
        ``max_hold`` if it could not be told the new TTL within a few
        seconds). First asks the cluster whether the hold lasted until
        now (one round trip): raises :class:`~raftlock.LockLost` if it had
        ended before the job did (force-released, its lease revoked, or the
        job overran ``max_hold``), and then releases it at once.
        """
        self._guard.finish()

    def ensure_owned(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the cluster confirms
        the hold now (one round trip, see :meth:`raftlock.Lock.ensure_owned`)."""
        self._guard.ensure_owned()

    def _on_exit(self) -> None:
        self.finish()


class TaskLock:
    """Lets a scheduled job run once across replicas (as ShedLock and
    grelmicro's ``TaskLock`` do): the first worker takes it, the others
    skip. It is held at least ``min_hold`` (so a worker whose clock runs
    late does not run the job again) and at most ``max_hold`` (a worker
    that dies or hangs frees it then). The worker does not wait for
    ``min_hold``: :meth:`run` returns when the job ends, and the rest of
    ``min_hold`` is held in the background (see :meth:`TaskGuard.finish`)."""

    def __init__(self, client: ClientBase, name: str, min_hold: float, max_hold: float) -> None:
        self._client = client
        self.name = name
        self.min_hold = checked_ttl(min_hold)
        self.max_hold = checked_ttl(max_hold)

    def try_acquire(self) -> TaskGuard | None:
        """Takes the lock if no worker holds it."""
        guard = self._client._native.task_lock(self.name, self.min_hold, self.max_hold)
        return None if guard is None else TaskGuard(guard)

    def run(self, job: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
        """Runs ``job(*args, **kwargs)`` if this worker got the lock;
        answers whether it ran. Returns as soon as the job ends; the lock
        stays held until ``min_hold`` has passed since it was taken, even
        if the interpreter exits first.

        ``True`` means the whole job ran under the lock: when it ended the
        cluster confirmed the hold (one round trip). If the lock was lost
        before the job ended (force-released, its lease revoked, or the
        job overran ``max_hold``), the job is not stopped, and ``run``
        raises :class:`~raftlock.LockLost` once it ends: another worker may
        have run it meanwhile."""
        guard = self.try_acquire()
        if guard is None:
            return False
        with guard:
            guard.ensure_valid()
            job(*args, **kwargs)
        return True


class Leadership(LeadershipBase, Scoped):
    """Leadership of an election, held on the client's session until
    :meth:`resign` (or leaving ``with``)."""

    def __init__(self, native: _native.NativeLeadership) -> None:
        super().__init__(native)
        self.lost = threading.Event()
        native.on_lost(on_lost_thread(self.lost, None))

    def proclaim(self, value: bytes | str) -> None:
        """Publishes a new value as leader."""
        self._native.proclaim(as_bytes(value))

    def ensure_owned(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the cluster confirms
        the leadership now (one round trip, see
        :meth:`raftlock.Lock.ensure_owned`)."""
        self._native.ensure_owned()

    def resign(self) -> None:
        """Steps down; the next candidate is elected."""
        self._native.resign()

    def _on_exit(self) -> None:
        if self._native.is_held():
            self.resign()


class Election:
    """An election: campaign to lead, read or watch the leader."""

    def __init__(self, client: ClientBase, name: str, *, timeout: float | None = None) -> None:
        self._client = client
        self.name = name
        self._timeout = wait_seconds("timeout", timeout)

    def campaign(self, value: bytes | str = b"", timeout: float | None = None) -> Leadership:
        """Waits (FIFO) until elected; publishes ``value``. Raises
        :class:`~raftlock.Timeout` after ``timeout`` seconds; ``timeout=0``
        is one try, raising it at once when another leads."""
        wait = self._timeout if timeout is None else wait_seconds("timeout", timeout)
        native = self._client._native.campaign(self.name, as_bytes(value), wait)
        return Leadership(elected(self.name, native))

    def leader(self) -> LeaderInfo | None:
        """The current leader, if any."""
        info: LeaderInfo | None = self._client._native.leader(self.name)
        return info

    def observe(self) -> Iterator[LeaderInfo | None]:
        """Each leader from now on (``None`` while there is none), following
        failovers; ends only with an error."""
        observer = self._client._native.observe(self.name)
        while True:
            more, leader = observer.next()
            if not more:
                return
            yield leader


class LeaderElection(Scoped):
    """Campaigns in the background, as grelmicro's ``LeaderElection`` and
    Kubernetes' leader election do: :attr:`is_leader` says whether this
    process leads now; when leadership is lost it campaigns again.

    ``with LeaderElection(...) as election:`` starts and stops it.
    """

    def __init__(self, client: ClientBase, name: str, value: bytes | str = b"") -> None:
        from raftlock._aio_client import Client as AioClient
        from raftlock._aio_leadership import LeaderElection as AioLeaderElection

        self._loop_thread = _LoopThread()
        self._inner = AioLeaderElection(AioClient._wrap(client._native), name, value)

    @property
    def is_leader(self) -> bool:
        """Whether this process leads now as far as it knows, with no call:
        a force-release or revoke made elsewhere shows after the next
        keep-alive round (a third of the session TTL)."""
        return self._inner.is_leader

    @property
    def fence(self) -> int:
        """The fencing token of the current leadership."""
        return self._inner.fence

    def start(self) -> None:
        """Starts campaigning in the background."""
        self._loop_thread.call(self._inner.start)

    def stop(self) -> None:
        """Stops campaigning and resigns if leading. Through a client of
        a node of this process (``node.client()``) the resign waits at
        most 0.5 s: with no quorum left (every replica stopping at once)
        the leadership ends when its session's TTL runs out."""
        self._loop_thread.run(self._inner.stop())
        self._loop_thread.close()

    def wait_for_leader(self, timeout: float | None = None) -> bool:
        """Waits until this process leads; ``False`` after ``timeout``."""
        return bool(self._loop_thread.run(self._inner.wait_for_leader(timeout)))

    def __enter__(self) -> LeaderElection:
        self.start()
        return self

    def _on_exit(self) -> None:
        self.stop()


class _LoopThread:
    """An asyncio loop on a thread of its own, for the blocking wrappers of
    background work written once in asyncio."""

    def __init__(self) -> None:
        import asyncio

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="raftlock-loop", daemon=True
        )
        self._thread.start()

    def call(self, fn: Callable[[], object]) -> None:
        done = threading.Event()

        def run() -> None:
            try:
                fn()
            finally:
                done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait()

    def run(self, coro: Any) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
