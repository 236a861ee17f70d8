"""The asyncio API: the same names as :mod:`raftlock`, awaited.

``async with client.lock("jobs/nightly"):`` takes and releases a lock;
``abort_on_loss=True`` cancels the task that holds a lock when the lock is
lost, as watchdog-renewed Redis locks do. :class:`Node` runs a raftlock
node inside this process, started and stopped with ``async with``.
"""

from __future__ import annotations

from raftlock._aio_client import Client, Fenced, Lock, RwLock, Semaphore
from raftlock._aio_leadership import Election, LeaderElection, Leadership, TaskGuard, TaskLock
from raftlock._aio_node import Node

__all__ = [
    "Client",
    "Election",
    "Fenced",
    "LeaderElection",
    "Leadership",
    "Lock",
    "Node",
    "RwLock",
    "Semaphore",
    "TaskGuard",
    "TaskLock",
]
