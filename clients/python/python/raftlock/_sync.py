"""The blocking API: ``raftlock.Client`` and what it hands out.

Each call blocks the calling thread with the GIL released, so other threads
run; Ctrl-C interrupts a wait. The sessions, keep-alives, leader following
and exactly-once retries are the Rust client's (``raftlock._native``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from os import PathLike
from types import TracebackType
from typing import Any, Generic, TypeVar

from raftlock import _native
from raftlock._common import as_bytes, endpoints_from, seconds, wait_limit
from raftlock._native import LeaderInfo, LeaseTtl, LockInfo
from raftlock.errors import LockLost, NotHeld, Timeout

T = TypeVar("T")
R = TypeVar("R")

#: ``on_lost`` callbacks get the reason as text.
OnLost = Callable[[str], object]


class Client:
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
        retry_for: seconds each call keeps retrying an unavailable cluster.
        token: bearer token (``raftlock auth create-token``); default
            ``RAFTLOCK_TOKEN``.
        cacert, cert, key: TLS: the cluster CA, and a client certificate
            and key for clusters that require one.
    """

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
    ) -> Lock:
        """An exclusive lock on ``name`` (not taken yet: ``with`` it, or
        ``acquire()``). See :class:`Lock`."""
        return Lock(
            self,
            name,
            ttl=ttl,
            timeout=timeout,
            owner=owner,
            lock_delay=lock_delay,
            on_lost=on_lost,
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
        return int(self._native.grant_lease(_ttl(ttl)))

    def keep_alive(self, lease: int) -> float:
        """Renews a lease once; answers its TTL."""
        return float(self._native.keep_alive(lease))

    def revoke(self, lease: int) -> int:
        """Revokes a lease; answers how many holds ended with it."""
        return int(self._native.revoke(lease))

    def set_lease_ttl(self, lease: int, ttl: float) -> float:
        """Gives a lease the TTL ``ttl`` from now (replicated; shorter or
        longer than before)."""
        return float(self._native.set_lease_ttl(lease, _ttl(ttl)))

    def time_to_live(self, lease: int) -> LeaseTtl:
        """A lease's TTL, the time it has left and what it holds."""
        ttl: LeaseTtl = self._native.time_to_live(lease)
        return ttl

    def session_lease(self) -> int:
        """The session lease's id, granting the session now if needed."""
        return int(self._native.session_lease())

    def close(self) -> None:
        """Ends the session: revokes its lease, releasing every lock held
        on it. The next lock grants a new session."""
        self._native.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _ttl(ttl: float) -> float:
    checked = seconds("ttl", ttl)
    assert checked is not None
    return checked


def _notify(event: threading.Event, callback: OnLost | None) -> Callable[[str], None]:
    """The native loss callback: runs on a client thread, so it only sets
    the event and hands the user's callback to a thread of its own (which
    may then call the blocking API)."""

    def lost(reason: str) -> None:
        event.set()
        if callback is not None:
            threading.Thread(
                target=callback, args=(reason,), name="raftlock-on-lost", daemon=True
            ).start()

    return lost


class Lock:
    """A lock on ``name``: exclusive unless made by :meth:`RwLock.read`.

    ``with lock:`` acquires (waiting up to ``timeout``, else raising
    :class:`~raftlock.Timeout`) and releases. It is re-entrant per owner:
    acquiring again while held (the same object, or another with the same
    ``owner`` on the same client) counts up and keeps the fence.

    A grant is never used unless the client can prove it still valid: right
    after it is granted, and in :meth:`owned` and :meth:`ensure_valid`, the
    lease must have been confirmed by the cluster less than its TTL minus
    the safety margin ago on the monotonic clock. After a pause (a stopped
    process, a long GC) that check fails and :class:`~raftlock.LockLost` is
    raised instead of letting two holders act at once.

    Args:
        ttl: hold the lock on a lease of its own with this TTL (kept alive
            while held) instead of the client's session.
        timeout: default seconds to wait in the queue; ``None``: forever.
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
        self._client = client
        self.name = name
        self.owner = owner if owner is not None else str(uuid.uuid4())
        self._ttl = seconds("ttl", ttl)
        self._timeout = seconds("timeout", timeout)
        self._lock_delay = None if lock_delay is None else float(lock_delay)
        self._on_lost = on_lost
        self._mode = _mode
        self._permits = _permits
        self._limit = _limit
        self._guards: list[_native.NativeGuard] = []
        self._state = threading.Lock()
        self._lost = threading.Event()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes the lock (or one more level of it). Answers ``False`` if
        ``blocking`` is false and it is busy, or if ``timeout`` seconds pass
        (``None`` or ``-1``: the lock's own timeout)."""
        wait = wait_limit(blocking, timeout, self._timeout)
        with self._state:
            top = self._guards[-1] if self._guards else None
        if top is not None and top.is_held():
            top.ensure_valid()  # never re-enter a hold that is already lost
            guard = top.reenter()
        else:
            try:
                guard = self._client._native.lock(
                    self.name,
                    self._ttl,
                    wait,
                    blocking,
                    self._mode,
                    self._permits,
                    self._limit,
                    self.owner,
                    self._lock_delay,
                )
            except Timeout:
                return False
            if guard is None:
                return False
            self._lost = threading.Event()
            guard.on_lost(_notify(self._lost, self._on_lost))
        _valid_or_release(guard)
        with self._state:
            self._guards.append(guard)
        return True

    def release(self) -> None:
        """Releases one level. Raises :class:`~raftlock.NotHeld` if this
        object holds nothing, and :class:`~raftlock.LockLost` if the hold
        had been lost meanwhile (the critical section may have overlapped
        another holder's)."""
        with self._state:
            if not self._guards:
                raise NotHeld(f"lock {self.name!r} is not held by this object")
            guard = self._guards.pop()
        guard.release()

    def locked(self) -> bool:
        """Whether anyone holds the lock now (asks the cluster)."""
        info = self._client.describe(self.name)
        return info is not None and bool(info.holders)

    def owned(self) -> bool:
        """Whether this object holds the lock and can prove it still valid."""
        try:
            self.ensure_valid()
        except (LockLost, NotHeld):
            return False
        return True

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the hold can be trusted
        right now; call it right before acting on the lock."""
        self._top().ensure_valid()

    @property
    def fence(self) -> int:
        """The fencing token of the current hold: pass it to every resource
        the lock protects."""
        return self._top().fence

    @property
    def lease(self) -> int:
        """The lease the current hold is on."""
        return self._top().lease

    @property
    def lost(self) -> threading.Event:
        """Set when the current hold is lost (not when it is released)."""
        return self._lost

    def _top(self) -> _native.NativeGuard:
        with self._state:
            if not self._guards:
                raise NotHeld(f"lock {self.name!r} is not held by this object")
            return self._guards[-1]

    def __enter__(self) -> Lock:
        if not self.acquire():
            raise Timeout(f"lock {self.name!r} was not granted within {self._timeout}s")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<raftlock.Lock {self.name!r} owner={self.owner!r} depth={len(self._guards)}>"


def _valid_or_release(guard: _native.NativeGuard) -> None:
    """Never hands out a grant that cannot be proven still valid (granted
    while this process was paused, and expired since)."""
    try:
        guard.ensure_valid()
    except LockLost:
        with contextlib.suppress(LockLost):
            guard.release()
        raise


class Semaphore:
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
        self._client = client
        self.name = name
        self.limit = limit
        self._ttl = ttl
        self._timeout = timeout
        self._held: list[Lock] = []
        self._state = threading.Lock()

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
        with self._state:
            if not self._held:
                raise NotHeld(f"semaphore {self.name!r} holds no permits here")
            hold = self._held.pop()
        hold.release()

    @property
    def fence(self) -> int:
        """The fencing token of the last acquire."""
        with self._state:
            if not self._held:
                raise NotHeld(f"semaphore {self.name!r} holds no permits here")
            return self._held[-1].fence

    def __enter__(self) -> Semaphore:
        if not self.acquire():
            raise Timeout(f"semaphore {self.name!r}: no permit within {self._timeout}s")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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


class TaskGuard:
    """A held task lock; :meth:`finish` (or leaving ``with``) releases it
    once ``min_hold`` has passed."""

    def __init__(self, guard: _native.NativeTaskGuard) -> None:
        self._guard = guard
        self.lost = threading.Event()
        guard.on_lost(_notify(self.lost, None))

    @property
    def fence(self) -> int:
        """The fencing token of this run."""
        return self._guard.fence

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the hold is still good."""
        self._guard.ensure_valid()

    def finish(self) -> None:
        """The job is done: waits out ``min_hold``, then releases."""
        self._guard.finish()

    def __enter__(self) -> TaskGuard:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.finish()


class TaskLock:
    """Lets a scheduled job run once across replicas (as ShedLock does):
    the first worker takes it, the others skip. It is held at least
    ``min_hold`` (so a worker whose clock runs late does not run the job
    again) and at most ``max_hold`` (a worker that dies frees it then)."""

    def __init__(self, client: Client, name: str, min_hold: float, max_hold: float) -> None:
        self._client = client
        self.name = name
        self.min_hold = _ttl(min_hold)
        self.max_hold = _ttl(max_hold)

    def try_acquire(self) -> TaskGuard | None:
        """Takes the lock if no worker holds it."""
        guard = self._client._native.task_lock(self.name, self.min_hold, self.max_hold)
        return None if guard is None else TaskGuard(guard)

    def run(self, job: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
        """Runs ``job(*args, **kwargs)`` if this worker got the lock;
        answers whether it ran."""
        guard = self.try_acquire()
        if guard is None:
            return False
        with guard:
            guard.ensure_valid()
            job(*args, **kwargs)
        return True


class Leadership:
    """Leadership of an election, held on the client's session until
    :meth:`resign` (or leaving ``with``)."""

    def __init__(self, native: _native.NativeLeadership) -> None:
        self._native = native
        self.lost = threading.Event()
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

    def proclaim(self, value: bytes | str) -> None:
        """Publishes a new value as leader."""
        self._native.proclaim(as_bytes(value))

    def resign(self) -> None:
        """Steps down; the next candidate is elected."""
        self._native.resign()

    def __enter__(self) -> Leadership:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._native.is_held():
            self.resign()


class Election:
    """An election: campaign to lead, read or watch the leader."""

    def __init__(self, client: Client, name: str, *, timeout: float | None = None) -> None:
        self._client = client
        self.name = name
        self._timeout = seconds("timeout", timeout)

    def campaign(self, value: bytes | str = b"", timeout: float | None = None) -> Leadership:
        """Waits (FIFO) until elected; publishes ``value``."""
        wait = self._timeout if timeout is None else seconds("timeout", timeout)
        return Leadership(self._client._native.campaign(self.name, as_bytes(value), wait))

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


class LeaderElection:
    """Campaigns in the background, as grelmicro's ``LeaderElection`` and
    Kubernetes' leader election do: :attr:`is_leader` says whether this
    process leads now; when leadership is lost it campaigns again.

    ``with LeaderElection(...) as election:`` starts and stops it.
    """

    def __init__(self, client: Client, name: str, value: bytes | str = b"") -> None:
        from raftlock import asyncio as aio

        self._loop_thread = _LoopThread()
        self._inner = aio.LeaderElection(aio.Client._wrap(client._native), name, value)

    @property
    def is_leader(self) -> bool:
        """Whether this process leads now, as far as the client can prove."""
        return self._inner.is_leader

    @property
    def fence(self) -> int:
        """The fencing token of the current leadership."""
        return self._inner.fence

    def start(self) -> None:
        """Starts campaigning in the background."""
        self._loop_thread.call(self._inner.start)

    def stop(self) -> None:
        """Stops campaigning and resigns if leading."""
        self._loop_thread.run(self._inner.stop())
        self._loop_thread.close()

    def wait_for_leader(self, timeout: float | None = None) -> bool:
        """Waits until this process leads; ``False`` after ``timeout``."""
        return bool(self._loop_thread.run(self._inner.wait_for_leader(timeout)))

    def __enter__(self) -> LeaderElection:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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


class Fenced(Generic[T]):
    """A resource used only while a lock holds: each :meth:`write` first
    checks the hold is still valid (raising :class:`~raftlock.LockLost`
    otherwise) and passes the fencing token along, for the resource to
    reject writes older than one it has seen."""

    def __init__(self, hold: Lock | Leadership | TaskGuard, resource: T) -> None:
        self._hold = hold
        self.resource = resource

    def write(self, fn: Callable[[T, int], R]) -> R:
        """``fn(resource, fence)``, if the hold is still valid."""
        self._hold.ensure_valid()
        return fn(self.resource, self._hold.fence)
