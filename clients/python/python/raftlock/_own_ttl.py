"""Locks whose TTL is their own (Redis ``SET NX PX``, grelmicro's
``duration``): each hold gets a lease of its own that is never kept alive.

The lease is granted with a TTL of at least :data:`WAIT_TTL`, so it cannot
run out on the way to the leader or while its owner waits in the queue;
once the lock is granted, ``Lease.SetTtl`` gives it the lock's TTL from
that moment. So a lock of 1 ms is granted and then lives 1 ms, instead of
expiring before it could be taken. A waiter whose process dies leaves the
queue within :data:`WAIT_TTL`; one that waits longer queues again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from raftlock.errors import LeaseExpired, Timeout, WaitEnded

if TYPE_CHECKING:
    from raftlock._native import NativeClient

#: Seconds a lease lives while its lock is being taken or waited for.
WAIT_TTL = 5.0


def acquire(
    native: NativeClient, name: str, owner: str, ttl: float, wait: bool, timeout: float | None
) -> tuple[int, int] | None:
    """``(lease, fence)`` of a hold of ``name`` by ``owner`` that ends
    ``ttl`` seconds after it was granted; ``None`` if busy or timed out."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        lease = int(native.grant_lease(max(ttl, WAIT_TTL)))
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            granted = native.acquire_on(name, owner, lease, wait, left if wait else None)
            if granted is None:
                _revoke(native, lease)
                return None
            native.set_lease_ttl(lease, ttl)
            return lease, int(granted[0])
        except Timeout:
            _revoke(native, lease)
            return None
        except (LeaseExpired, WaitEnded):
            # The wait outlived its lease: queue again while time is left.
            _revoke(native, lease)
            if not wait or (deadline is not None and time.monotonic() >= deadline):
                return None
        except BaseException:
            _revoke(native, lease)
            raise


async def acquire_async(
    native: NativeClient, name: str, owner: str, ttl: float, wait: bool, timeout: float | None
) -> tuple[int, int] | None:
    """:func:`acquire`, awaited."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        lease = int(await native.grant_lease(max(ttl, WAIT_TTL), aio=True))
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            granted = await native.acquire_on(
                name, owner, lease, wait, left if wait else None, aio=True
            )
            if granted is None:
                await revoke_async(native, lease)
                return None
            await native.set_lease_ttl(lease, ttl, aio=True)
            return lease, int(granted[0])
        except Timeout:
            await revoke_async(native, lease)
            return None
        except (LeaseExpired, WaitEnded):
            await revoke_async(native, lease)
            if not wait or (deadline is not None and time.monotonic() >= deadline):
                return None
        except BaseException:
            await revoke_async(native, lease)
            raise


def _revoke(native: NativeClient, lease: int) -> int:
    """Revokes ``lease``; answers how many holds ended (0 if it was gone)."""
    try:
        return int(native.revoke(lease))
    except LeaseExpired:
        return 0


revoke = _revoke


async def revoke_async(native: NativeClient, lease: int) -> int:
    """:func:`revoke`, awaited."""
    try:
        return int(await native.revoke(lease, aio=True))
    except LeaseExpired:
        return 0
