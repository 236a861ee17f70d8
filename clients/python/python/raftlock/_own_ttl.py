"""Locks whose TTL is their own (Redis ``SET NX PX``, grelmicro's
``duration``): each hold is on a lease of its own that is never kept alive.

A try-lock is one call and one Raft entry (``Acquire`` with ``ttl_ms``):
the lease and the hold are made together, the TTL counts from the grant,
and a busy lock makes no lease. A waiting acquire needs its lease to live
while it waits: the lease is granted with a TTL of at least
:data:`WAIT_TTL` and, once the lock is granted, ``Lease.SetTtl`` gives it
the lock's TTL from that moment. A waiter whose process dies leaves the
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
    if not wait:
        held: tuple[int, int] | None = native.acquire_with_ttl(name, owner, ttl)
        return held
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
    if not wait:
        held: tuple[int, int] | None = await native.acquire_with_ttl(name, owner, ttl, aio=True)
        return held
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
