"""The blocking API: ``raftlock.Client`` and what it hands out.

Each call blocks the calling thread with the GIL released, so other threads
run; Ctrl-C interrupts a wait. The sessions, keep-alives, leader following
and exactly-once retries are the Rust client's (``raftlock._native``).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from raftlock import _native
from raftlock._base import (
    ClientBase,
    LockBase,
    LockOptions,
    OnLost,
    SemaphoreBase,
    checked_ttl,
    on_lost_thread,
)
from raftlock._common import wait_limit
from raftlock._native import LeaseTtl, LockInfo
from raftlock._scope import Scoped
from raftlock._sync_leadership import (
    Election,
    LeaderElection,
    Leadership,
    TaskGuard,
    TaskLock,
)
from raftlock.errors import LockLost, NotHeld, Timeout

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

T = TypeVar("T")
R = TypeVar("R")


class Client(ClientBase, Scoped):
    """A connection to a raftlock cluster.

    Talks to any node (nodes forward to the leader), follows the leader,
    retries with the same request id so each call is applied once, and keeps
    one session lease alive in the background for the locks it takes. Safe
    to share between threads.

    Args:
        endpoints: ``host:port`` of some nodes' client ports, a list or a
            comma-separated string; default ``RAFTLOCK_ENDPOINTS``, else
            ``127.0.0.1:7379``.
        session_ttl: seconds the session lease lives without a keep-alive
            (locks of a process that dies are freed after it); at least 0.1.
        safety_margin: seconds before the TTL at which a hold whose
            keep-alives fail is given up as lost (default: a third of it).
        retry_for: seconds each call keeps retrying an unavailable cluster
            (a call given a ``timeout`` ends by then, connecting included).
        token: bearer token (``raftlock auth create-token``); default
            ``RAFTLOCK_TOKEN``.
        cacert, cert, key: TLS: the cluster CA, and a client certificate
            and key for clusters that require one.
        dial_timeout: seconds each endpoint may take to connect and answer
            before the next one is tried (a paused or silent node costs a
            call about this long; a call on a node that answers is never
            cut short by it); default ``RAFTLOCK_DIAL_TIMEOUT`` (as the
            command line reads it), else 1.
    """

    def lock(self, name: str, **options: Unpack[LockOptions]) -> Lock:
        """An exclusive lock on ``name`` (not taken yet: ``with`` it, or
        ``acquire()``); the keywords are :class:`Lock`'s."""
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
        """A background campaign in election ``name`` (see :class:`LeaderElection`)."""
        return LeaderElection(self, name, value)

    def check(self, name: str, fence: int) -> bool:
        """Whether ``fence`` is still the fencing token of a live hold of
        ``name`` (asked of the leader, linearizable)."""
        return bool(self._native.check(name, fence))

    def describe(self, name: str) -> LockInfo | None:
        """Lock ``name`` with its holders and waiters; ``None`` if unused."""
        info: LockInfo | None = self._native.describe(name)
        return info

    def list_locks(self, prefix: str = "", limit: int = 0) -> list[LockInfo]:
        """Locks whose names start with ``prefix`` (``limit`` 0: all)."""
        locks: list[LockInfo] = self._native.list(prefix, limit)
        return locks

    def force_release(self, name: str) -> int:
        """Operator override: ends every hold of ``name``; answers how many."""
        return int(self._native.force_release(name))

    def grant_lease(self, ttl: float) -> int:
        """Grants a lease of ``ttl`` seconds (0.001 to 86 400); answers its id."""
        return int(self._native.grant_lease(checked_ttl(ttl)))

    def keep_alive(self, lease: int) -> float:
        """Renews a lease once; answers its TTL."""
        return float(self._native.keep_alive(lease))

    def revoke(self, lease: int) -> int:
        """Revokes a lease; answers how many holds ended with it."""
        return int(self._native.revoke(lease))

    def set_lease_ttl(self, lease: int, ttl: float) -> float:
        """Gives a lease the TTL ``ttl`` from now (replicated; shorter or
        longer than before)."""
        return float(self._native.set_lease_ttl(lease, checked_ttl(ttl)))

    def time_to_live(self, lease: int) -> LeaseTtl:
        """A lease's TTL, the time it has left and what it holds."""
        ttl: LeaseTtl = self._native.time_to_live(lease)
        return ttl

    def session_lease(self) -> int:
        """The session lease's id, granting the session now if needed."""
        return int(self._native.session_lease())

    def close(self) -> None:
        """Ends the session: revokes its lease, releasing every lock held
        on it. The next lock grants a new session. First waits (within the
        retry budget) for the background releases of cancelled or
        interrupted acquires and of dropped holds."""
        self._native.close()

    def _on_exit(self) -> None:
        self.close()


class Lock(LockBase, Scoped):
    """A lock on ``name``: exclusive unless made by :meth:`RwLock.read`.

    ``with lock:`` acquires (waiting up to ``timeout``, else raising
    :class:`~raftlock.Timeout`) and releases. It is re-entrant per owner:
    acquiring again while held (the same object, or another with the same
    ``owner`` on the same client) counts up and keeps the fence.

    A grant is never used unless the client can prove it still valid: right
    after it is granted, and in every check of the hold, the lease must
    have been confirmed by the cluster less than its TTL minus the safety
    margin ago on the monotonic clock. After a pause (a stopped process, a
    long GC) that check fails and :class:`~raftlock.LockLost` is raised
    instead of letting two holders act at once.

    What each check proves, and costs: :attr:`held` and
    :meth:`ensure_valid` make no call and know what this process knows (a
    force-release or revoke made elsewhere shows after the next
    keep-alive round, a third of the TTL); :meth:`owned`,
    :meth:`ensure_owned` and :meth:`Fenced.write <raftlock.Fenced.write>`
    also ask the cluster, with one round trip (a linearizable ``Check``
    through the leader), and so see every loss applied before the call.

    Args:
        ttl: hold the lock on a lease of its own with this TTL (kept alive
            while held) instead of the client's session.
        timeout: default seconds an acquire may take, in the queue and
            connecting to the cluster alike; ``None``: wait forever (a
            call to an unreachable cluster still gives up after
            ``retry_for``). A wait whose node fails may run past it while
            the client learns whether it was granted.
        owner: the owner token (default: a fresh UUID per object).
        lock_delay: if this hold is lost to expiry or force-release, nobody
            gets the lock for this long (Consul's lock-delay).
        on_lost: called with the reason, from a thread of its own, when a
            hold is lost.
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
        # The current hold's loss event: made with the hold when a callback
        # needs it, otherwise on first use of ``lost`` (most holds never
        # look, and an event and a watcher per hold cost).
        self._lost: threading.Event | None = None

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes the lock (or one more level of it). Answers ``False`` if
        ``blocking`` is false and it is busy, or if ``timeout`` seconds pass
        (``None`` or ``-1``: the lock's own timeout)."""
        blocking, wait = wait_limit(blocking, timeout, self._timeout)
        top = self._held_top()
        if top is not None:
            guard = top.reenter()
        else:
            if self._on_lost is None:
                lost = on_lost = None
            else:
                lost = threading.Event()
                on_lost = on_lost_thread(lost, self._on_lost)
            try:
                guard = self._client._native.lock(*self._lock_args(wait, blocking), on_lost=on_lost)
            except Timeout:
                return False
            if guard is None:
                return False
            with self._state:
                self._lost = lost
                self._hold = guard
        _valid_or_release(guard)
        self._push(guard)
        return True

    def release(self) -> None:
        """Releases one level. Raises :class:`~raftlock.NotHeld` if this
        object holds nothing, and :class:`~raftlock.LockLost` if the hold
        had been lost meanwhile (the critical section may have overlapped
        another holder's)."""
        guard = self._pop()
        if guard is self._hold:
            with self._state:
                self._hold = None
                if self._lost is None and guard.is_lost():
                    self._lost = threading.Event()
                    self._lost.set()
        guard.release()

    def locked(self) -> bool:
        """Whether anyone holds the lock now (asks the cluster)."""
        info = self._client.describe(self.name)
        return info is not None and bool(info.holders)

    def owned(self) -> bool:
        """Whether this object holds the lock, proven now: the cluster is
        asked (one round trip, linearizable), so a force-release, revoke
        or expiry applied before the call answers ``False`` (and sets
        :attr:`lost`). Raises what the call raises if the cluster cannot
        be asked (:class:`~raftlock.Unavailable`, ...): nothing is proven
        then."""
        try:
            self.ensure_owned()
        except (LockLost, NotHeld):
            return False
        return True

    def ensure_owned(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the cluster confirms,
        now, that this object holds the lock (one round trip, see
        :meth:`owned`); call it right before an act that must not overlap
        another holder's."""
        self._top().ensure_owned()

    @property
    def lost(self) -> threading.Event:
        """Set when the current hold is lost (not when it is released)."""
        lost = self._lost
        if lost is None:
            with self._state:
                if self._lost is None:
                    self._lost = threading.Event()
                    if self._hold is not None:
                        with contextlib.suppress(NotHeld):
                            self._hold.on_lost(on_lost_thread(self._lost, None))
                lost = self._lost
        return lost

    def __enter__(self) -> Lock:
        if not self.acquire():
            raise Timeout(f"lock {self.name!r} was not granted within {self._timeout}s")
        return self

    def _on_exit(self) -> None:
        self.release()


def _valid_or_release(guard: _native.NativeGuard) -> None:
    """Never hands out a grant that cannot be proven still valid (granted
    while this process was paused, and expired since)."""
    try:
        guard.ensure_valid()
    except LockLost:
        with contextlib.suppress(LockLost):
            guard.release()
        raise


class Semaphore(SemaphoreBase, Scoped):
    """A counting semaphore of ``limit`` permits: each :meth:`acquire` takes
    ``permits`` of them (FIFO), each :meth:`release` gives back the last."""

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

    def acquire(
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
        if not hold.acquire(blocking, timeout):
            return False
        with self._state:
            self._held.append(hold)
        return True

    def release(self) -> None:
        """Gives back the permits of the last acquire."""
        self._last(pop=True).release()

    def __enter__(self) -> Semaphore:
        if not self.acquire():
            raise Timeout(f"semaphore {self.name!r}: no permit within {self._timeout}s")
        return self

    def _on_exit(self) -> None:
        self.release()


class RwLock:
    """A read-write lock: many readers or one writer, in FIFO order."""

    def __init__(
        self, client: Client, name: str, *, ttl: float | None = None, timeout: float | None = None
    ) -> None:
        self._client = client
        self.name = name
        self._ttl = ttl
        self._timeout = timeout

    def read(self, *, owner: str | None = None) -> Lock:
        """A shared hold (``with rw.read(): ...``)."""
        return Lock(
            self._client,
            self.name,
            ttl=self._ttl,
            timeout=self._timeout,
            owner=owner,
            _mode="shared",
        )

    def write(self, *, owner: str | None = None) -> Lock:
        """An exclusive hold (``with rw.write(): ...``)."""
        return Lock(self._client, self.name, ttl=self._ttl, timeout=self._timeout, owner=owner)


class Fenced(Generic[T]):
    """A resource used only while a lock holds: each :meth:`write` first
    asks the cluster whether the hold still holds (one round trip; raising
    :class:`~raftlock.LockLost`, without writing, if not) and passes the
    fencing token along, for the resource to reject writes older than one
    it has seen."""

    def __init__(self, hold: Lock | Leadership | TaskGuard, resource: T) -> None:
        self._hold = hold
        self.resource = resource

    def write(self, fn: Callable[[T, int], R]) -> R:
        """``fn(resource, fence)``, if the cluster confirms the hold now
        (see :meth:`Lock.ensure_owned`); a force-release, revoke or expiry
        applied before the call raises :class:`~raftlock.LockLost` and
        ``fn`` is not called."""
        self._hold.ensure_owned()
        return fn(self.resource, self._hold.fence)
