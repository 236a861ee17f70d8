"""What the blocking and the asyncio classes share: everything that makes
no call, so ``raftlock`` and ``raftlock.asyncio`` differ only in how they
call (blocking, or awaited)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, TypedDict, TypeVar

from raftlock import _native
from raftlock._common import endpoints_from, seconds, session_ttl_seconds, wait_seconds
from raftlock.errors import LockLost, NotHeld

#: ``on_lost`` callbacks get the reason as text.
OnLost = Callable[[str], object]


class LockOptions(TypedDict, total=False):
    """The keywords of a lock (see :class:`raftlock.Lock`)."""

    ttl: float | None
    timeout: float | None
    owner: str | None
    lock_delay: float | None
    on_lost: OnLost | None


ClientT = TypeVar("ClientT", bound="ClientBase")


class ClientBase:
    """What the blocking and the asyncio ``Client`` share: their arguments
    (documented on :class:`raftlock.Client`) and the native client they
    make."""

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
        dial_timeout: float | None = None,
    ) -> None:
        self._native = _native.NativeClient(
            endpoints_from(endpoints),
            session_ttl=session_ttl_seconds(session_ttl),
            safety_margin=seconds("safety_margin", safety_margin),
            retry_for=seconds("retry_for", retry_for),
            token=token if token is not None else os.environ.get("RAFTLOCK_TOKEN"),
            cacert=cacert,
            cert=cert,
            key=key,
            dial_timeout=seconds("dial_timeout", dial_timeout),
        )

    @classmethod
    def _wrap(cls: type[ClientT], native: _native.NativeClient) -> ClientT:
        """A client over a native one made elsewhere (a node's)."""
        client = cls.__new__(cls)
        client._native = native
        return client

    @property
    def endpoints(self) -> list[str]:
        """The endpoints this client uses."""
        return self._native.endpoints


def checked_ttl(ttl: float) -> float:
    """``ttl`` if it is a positive number of seconds."""
    checked = seconds("ttl", ttl)
    assert checked is not None
    return checked


def on_lost_thread(event: threading.Event, callback: OnLost | None) -> Callable[[str], None]:
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


def on_lost_loop(
    event: asyncio.Event,
    callback: OnLost | None,
    task: asyncio.Task[Any] | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Callable[[str], None]:
    """The native loss callback (on a client thread): sets ``event``, runs
    ``callback`` and cancels ``task``, on the loop they belong to
    (``loop``, default the running one)."""
    if loop is None:
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


class LockBase:
    """A lock's settings and the stack of its holds (one per re-entry)."""

    def __init__(
        self,
        name: str,
        *,
        ttl: float | None,
        timeout: float | None,
        owner: str | None,
        lock_delay: float | None,
        mode: str,
        permits: int,
        limit: int,
    ) -> None:
        self.name = name
        self.owner = owner if owner is not None else _native.new_owner()
        self._ttl = seconds("ttl", ttl)
        self._timeout = wait_seconds("timeout", timeout)
        self._lock_delay = None if lock_delay is None else float(lock_delay)
        self._mode = mode
        self._permits = permits
        self._limit = limit
        self._guards: list[_native.NativeGuard] = []
        self._state = threading.Lock()
        # The first level of the current hold, whose loss ``lost`` reports.
        self._hold: _native.NativeGuard | None = None

    def _lock_args(self, wait: float | None, blocking: bool) -> tuple[Any, ...]:
        """The arguments of ``NativeClient.lock`` for one acquire."""
        return (
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

    def _held_top(self) -> _native.NativeGuard | None:
        """The hold to re-enter, if this object holds the lock; raises
        :class:`~raftlock.LockLost` rather than re-enter a lost hold."""
        with self._state:
            top = self._guards[-1] if self._guards else None
        if top is None or not top.is_held():
            return None
        top.ensure_valid()
        return top

    def _push(self, guard: _native.NativeGuard) -> None:
        with self._state:
            self._guards.append(guard)

    def _pop(self) -> _native.NativeGuard:
        with self._state:
            if not self._guards:
                raise NotHeld(f"lock {self.name!r} is not held by this object")
            return self._guards.pop()

    def _top(self) -> _native.NativeGuard:
        with self._state:
            if not self._guards:
                raise NotHeld(f"lock {self.name!r} is not held by this object")
            return self._guards[-1]

    @property
    def held(self) -> bool:
        """Whether this object holds the lock as far as this process knows,
        with no call: it took the lock, no loss was noticed, and the lease
        was confirmed by the cluster less than its TTL minus the safety
        margin ago. A force-release or revoke made elsewhere shows here
        only after the next keep-alive round (a third of the TTL);
        :meth:`owned` asks the cluster."""
        try:
            self.ensure_valid()
        except (LockLost, NotHeld):
            return False
        return True

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the hold can be trusted
        as far as this process knows (:attr:`held`, no call; it catches a
        pause); :meth:`ensure_owned` asks the cluster."""
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

    def __repr__(self) -> str:
        kind = type(self).__module__ + "." + type(self).__name__
        return f"<{kind} {self.name!r} owner={self.owner!r} depth={len(self._guards)}>"


class SemaphoreBase:
    """A semaphore's settings and the holds of its acquires, last first."""

    def __init__(self, name: str, limit: int, *, ttl: float | None, timeout: float | None) -> None:
        self.name = name
        self.limit = limit
        self._ttl = ttl
        self._timeout = timeout
        self._held: list[Any] = []
        self._state = threading.Lock()

    def _last(self, pop: bool) -> Any:
        with self._state:
            if not self._held:
                raise NotHeld(f"semaphore {self.name!r} holds no permits here")
            return self._held.pop() if pop else self._held[-1]

    @property
    def fence(self) -> int:
        """The fencing token of the last acquire."""
        return int(self._last(pop=False).fence)


class LeadershipBase:
    """What a leadership answers without a call."""

    def __init__(self, native: _native.NativeLeadership) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def fence(self) -> int:
        """The leadership's fencing token (its term)."""
        return self._native.fence

    @property
    def is_leader(self) -> bool:
        """Whether this still leads as far as this process knows, with no
        call (see :attr:`raftlock.Lock.held`); ``ensure_owned()`` asks the
        cluster."""
        try:
            self._native.ensure_valid()
        except (LockLost, NotHeld):
            return False
        return True

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless leadership can be
        trusted as far as this process knows (no call)."""
        self._native.ensure_valid()


class TaskGuardBase:
    """What a held task lock answers without a call."""

    def __init__(self, guard: _native.NativeTaskGuard) -> None:
        self._guard = guard

    @property
    def fence(self) -> int:
        """The fencing token of this run."""
        return self._guard.fence

    def ensure_valid(self) -> None:
        """Raises :class:`~raftlock.LockLost` unless the hold can be trusted
        as far as this process knows (no call)."""
        self._guard.ensure_valid()
