"""Type stubs of the native half of raftlock (the Rust client, bound with PyO3).

Every call blocks (GIL released) or, with ``aio=True``, returns an awaitable.
Use the ``raftlock`` and ``raftlock.asyncio`` modules, not this one.
"""

from collections.abc import Awaitable, Callable
from os import PathLike
from typing import Any, Literal, overload, type_check_only

def run_cli(argv: list[str]) -> int:
    """Runs the ``raftlock`` command line ``argv`` (``sys.argv``) in this
    process; returns its exit code."""

def interpreter_exiting() -> None:
    """From now on no runtime thread enters Python (an ``atexit`` hook)."""

def flush_logs(timeout: float = 1.0) -> None:
    """Waits (up to ``timeout`` seconds) until the records of the Rust
    code's events so far were handed to :mod:`logging`."""

def log_record_counts() -> tuple[int, int]:
    """How many records were queued for :mod:`logging`, and how many were
    dropped because its handlers fell behind, so far."""

def new_owner() -> str:
    """A fresh owner token: a random UUID, as text."""

def admin_token(path: str | PathLike[str]) -> str:
    """The cluster's admin credential, derived from the secret in a node's
    data dir or a join-token file (``ValueError`` when it cannot be read)."""

class LoopPort:
    """Where the awaited calls of one event loop end (``loop.add_reader``)."""
    def fileno(self) -> int: ...
    def drain(self) -> None: ...

class CallFuture(Awaitable[Any]):
    """What an awaited call answers on a loop with a port: an asyncio
    future to asyncio (``asyncio.isfuture``), resolved by the port."""

    _asyncio_future_blocking: bool
    def __await__(self) -> Any: ...
    def __iter__(self) -> CallFuture: ...
    def __next__(self) -> Any: ...
    def get_loop(self) -> Any: ...
    def done(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def result(self) -> Any: ...
    def exception(self) -> BaseException | None: ...
    def cancel(self, msg: Any | None = None) -> bool: ...
    def add_done_callback(
        self, callback: Callable[[CallFuture], object], *, context: Any | None = None
    ) -> None: ...
    def remove_done_callback(self, callback: Callable[[CallFuture], object]) -> int: ...

class Holder:
    owner: str
    lease: int
    mode: str
    permits: int
    fence: int
    count: int
    held: float
    value: bytes
    lock_delay: float

class Waiter:
    owner: str
    lease: int
    mode: str
    permits: int
    waited: float

class LockInfo:
    name: str
    semaphore_limit: int
    holders: list[Holder]
    waiters: list[Waiter]
    delayed: float

class LeaderInfo:
    owner: str
    lease: int
    fence: int
    value: bytes

class LeaseTtl:
    granted_ttl: float
    remaining: float | None
    attachments: list[tuple[str, str, bool]]

class LeadRecord:
    holder: str
    ttl: float
    acquired_at_ms: int
    renewed_at_ms: int
    transitions: int
    metadata: dict[str, str]

@type_check_only
class _Hold:
    """The checks every native hold has (the ``hold_methods!`` of
    guards.rs); a name for the stubs only, no class at run time."""

    fence: int
    def ensure_valid(self) -> None:
        """Raises ``LockLost`` unless the hold can be trusted as far as this
        process knows: no call (a loss noticed, or a pause past the lease's
        trust window)."""
    @overload
    def ensure_owned(self, *, aio: Literal[False] = False) -> None:
        """Raises ``LockLost`` unless the cluster confirms the hold now: one
        round trip (a linearizable ``Check`` through the leader); a loss
        found is kept for ``is_lost`` and ``on_lost``."""
    @overload
    def ensure_owned(self, *, aio: Literal[True]) -> Awaitable[None]: ...
    def is_lost(self) -> bool: ...
    def on_lost(self, callback: Callable[[str], object]) -> None: ...

@type_check_only
class _NamedHold(_Hold):
    """A hold of a named lock or election, by an owner on a lease; for the
    stubs only."""

    name: str
    owner: str
    lease: int
    def is_held(self) -> bool: ...

class NativeGuard(_NamedHold):
    count: int
    @overload
    def reenter(self, *, aio: Literal[False] = False) -> NativeGuard: ...
    @overload
    def reenter(self, *, aio: Literal[True]) -> Awaitable[NativeGuard]: ...
    @overload
    def release(self, *, aio: Literal[False] = False) -> None: ...
    @overload
    def release(self, *, aio: Literal[True]) -> Awaitable[None]: ...

class NativeLeadership(_NamedHold):
    @overload
    def proclaim(self, value: bytes, *, aio: Literal[False] = False) -> None: ...
    @overload
    def proclaim(self, value: bytes, *, aio: Literal[True]) -> Awaitable[None]: ...
    @overload
    def resign(self, *, aio: Literal[False] = False) -> None: ...
    @overload
    def resign(self, *, aio: Literal[True]) -> Awaitable[None]: ...

class NativeTaskGuard(_Hold):
    @overload
    def finish(self, *, aio: Literal[False] = False) -> None: ...
    @overload
    def finish(self, *, aio: Literal[True]) -> Awaitable[None]: ...

class NativeObserver:
    @overload
    def next(self, *, aio: Literal[False] = False) -> tuple[bool, LeaderInfo | None]: ...
    @overload
    def next(self, *, aio: Literal[True]) -> Awaitable[tuple[bool, LeaderInfo | None]]: ...

class Member:
    id: int
    peer_addr: str
    client_addr: str
    voter: bool

class NodeStatus:
    id: int
    role: str
    term: int
    leader: int | None
    last_log_index: int
    applied_index: int
    snapshot_index: int
    members: list[Member]

class NativeNode:
    id: int
    data_dir: PathLike[str]
    def __init__(self, options: list[tuple[str, str | bool]]) -> None: ...
    @staticmethod
    def options() -> list[tuple[str, bool, str]]: ...
    @overload
    def start(self, *, aio: Literal[False] = False) -> None: ...
    @overload
    def start(self, *, aio: Literal[True]) -> Awaitable[None]: ...
    @overload
    def wait_ready(self, timeout: float | None = None, *, aio: Literal[False] = False) -> int: ...
    @overload
    def wait_ready(self, timeout: float | None = None, *, aio: Literal[True]) -> Awaitable[int]: ...
    def status(self) -> NodeStatus: ...
    def is_running(self) -> bool: ...
    def addresses(self) -> tuple[str, str, str | None]: ...
    def client(
        self,
        *,
        session_ttl: float | None = None,
        safety_margin: float | None = None,
        retry_for: float | None = None,
        token: str | None = None,
    ) -> NativeClient: ...
    @overload
    def stop(self, *, aio: Literal[False] = False) -> None: ...
    @overload
    def stop(self, *, aio: Literal[True]) -> Awaitable[None]: ...
    def stop_at_exit(self) -> None: ...

class NativeClient:
    endpoints: list[str]
    def __init__(
        self,
        endpoints: list[str],
        *,
        session_ttl: float | None = None,
        safety_margin: float | None = None,
        retry_for: float | None = None,
        token: str | None = None,
        cacert: str | PathLike[str] | None = None,
        cert: str | PathLike[str] | None = None,
        key: str | PathLike[str] | None = None,
        dial_timeout: float | None = None,
    ) -> None: ...
    def lock(
        self,
        name: str,
        ttl: float | None,
        timeout: float | None,
        wait: bool,
        mode: str,
        permits: int,
        limit: int,
        owner: str | None,
        lock_delay: float | None,
        *,
        on_lost: Callable[[str], object] | None = None,
        aio: bool = False,
    ) -> Any: ...
    def check(self, name: str, fence: int, *, aio: bool = False) -> Any: ...
    def describe(self, name: str, *, aio: bool = False) -> Any: ...
    def list(self, prefix: str, limit: int, *, aio: bool = False) -> Any: ...
    def force_release(self, name: str, *, aio: bool = False) -> Any: ...
    def grant_lease(self, ttl: float, *, aio: bool = False) -> Any: ...
    def keep_alive(self, lease: int, *, aio: bool = False) -> Any: ...
    def revoke(self, lease: int, *, aio: bool = False) -> Any: ...
    def set_lease_ttl(self, lease: int, ttl: float, *, aio: bool = False) -> Any: ...
    def time_to_live(self, lease: int, *, aio: bool = False) -> Any: ...
    def acquire_on(
        self,
        name: str,
        owner: str,
        lease: int,
        wait: bool,
        timeout: float | None,
        *,
        aio: bool = False,
    ) -> Any: ...
    def release_on(self, name: str, owner: str, *, aio: bool = False) -> Any: ...
    def acquire_with_ttl(self, name: str, owner: str, ttl: float, *, aio: bool = False) -> Any: ...
    def campaign(
        self, name: str, value: bytes, timeout: float | None, *, aio: bool = False
    ) -> Any: ...
    def leader(self, name: str, *, aio: bool = False) -> Any: ...
    def task_lock(
        self, name: str, min_hold: float, max_hold: float, *, aio: bool = False
    ) -> Any: ...
    def session_lease(self, *, aio: bool = False) -> Any: ...
    def close(self, *, aio: bool = False) -> Any: ...
    def observe(self, name: str) -> NativeObserver: ...
    @property
    def coordination(self) -> NativeCoordination: ...

class NativeCoordination:
    """The calls grelmicro's coordination adapters make, on a client's connection."""

    def hold(self, name: str, owner: str, ttl: float, *, aio: bool = False) -> Any: ...
    def unhold(self, name: str, owner: str, *, aio: bool = False) -> Any: ...
    def read_write(
        self, name: str, owner: str, op: str, ttl: float, intent: bool, *, aio: bool = False
    ) -> Any: ...
    def read_write_state(self, name: str, *, aio: bool = False) -> Any: ...
    def lead(
        self, name: str, owner: str, ttl: float, metadata: dict[str, str], *, aio: bool = False
    ) -> Any: ...
    def leader_record(self, name: str, *, aio: bool = False) -> Any: ...
    def claim_fire(self, name: str, due: float, *, aio: bool = False) -> Any: ...
    def last_fired(self, name: str, *, aio: bool = False) -> Any: ...
