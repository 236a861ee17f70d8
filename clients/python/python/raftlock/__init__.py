"""raftlock: locks, leases, semaphores, elections and fencing tokens from a
raftlock cluster, in place of Redis locks.

The blocking API is here; the same names for asyncio are in
:mod:`raftlock.asyncio`; :mod:`raftlock.redis` has a redis-py-shaped
``Lock`` and :mod:`raftlock.grelmicro` a grelmicro ``SyncBackend``.
:class:`Node` runs a raftlock node inside this process, so an
application's replicas form their own lock cluster.

>>> import raftlock
>>> client = raftlock.Client("127.0.0.1:7379")      # doctest: +SKIP
>>> with client.lock("jobs/nightly", timeout=10) as lock:  # doctest: +SKIP
...     write_report(fence=lock.fence)
"""

from raftlock import _exit_hook  # noqa: F401 - first: its hook runs last
from raftlock._native import (
    Holder,
    LeaderInfo,
    LeaseTtl,
    LockInfo,
    Member,
    NodeStatus,
    Waiter,
    admin_token,
)
from raftlock._node_options import NodeOptions
from raftlock._sync import Client, Fenced, Lock, RwLock, Semaphore
from raftlock._sync_leadership import Election, LeaderElection, Leadership, TaskGuard, TaskLock
from raftlock._sync_node import Node
from raftlock.errors import (
    InternalError,
    InvalidArgument,
    LeaseExpired,
    LimitReached,
    LockLost,
    NodeError,
    NotHeld,
    NotServed,
    OutcomeUnknown,
    PermissionDenied,
    RaftlockError,
    StaleFence,
    Timeout,
    TlsError,
    Unauthenticated,
    Unavailable,
    WaitEnded,
)

__all__ = [
    "Client",
    "Election",
    "Fenced",
    "Holder",
    "InternalError",
    "InvalidArgument",
    "LeaderElection",
    "LeaderInfo",
    "Leadership",
    "LeaseExpired",
    "LeaseTtl",
    "LimitReached",
    "Lock",
    "LockInfo",
    "LockLost",
    "Member",
    "Node",
    "NodeError",
    "NodeOptions",
    "NodeStatus",
    "NotHeld",
    "NotServed",
    "OutcomeUnknown",
    "PermissionDenied",
    "RaftlockError",
    "RwLock",
    "Semaphore",
    "StaleFence",
    "TaskGuard",
    "TaskLock",
    "Timeout",
    "TlsError",
    "Unauthenticated",
    "Unavailable",
    "WaitEnded",
    "Waiter",
    "admin_token",
]
