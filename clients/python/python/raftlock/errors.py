"""The exceptions raftlock raises: one hierarchy under :class:`RaftlockError`.

Each also derives from the built-in exception a Python program would catch
for the same trouble (``TimeoutError``, ``ConnectionError``, ``ValueError``,
``PermissionError``, ``RuntimeError``), so code written for other clients
keeps working.
"""

from __future__ import annotations


class RaftlockError(Exception):
    """Something went wrong talking to raftlock."""


class InvalidArgument(RaftlockError, ValueError):
    """The request was malformed (a name too long, a TTL out of range...)."""


class LeaseExpired(RaftlockError):
    """The lease is gone (expired or revoked): its locks are released."""


class NotHeld(RaftlockError, RuntimeError):
    """The caller does not hold the lock it tried to release or use."""


class Timeout(RaftlockError, TimeoutError):
    """A wait ran out of time; the server cancelled it."""


class WaitEnded(RaftlockError):
    """A wait ended without a grant (cancelled, its lease ended, force-released)."""


class LimitReached(RaftlockError):
    """Too many waiters on a lock, or too many leases in the cluster."""


class LockLost(RaftlockError):
    """A lock, permit or leadership can no longer be trusted.

    Its lease ended (expired, revoked, or keep-alives failed past the safety
    margin), or it was force-released. Stop acting as its holder: another
    client may hold it now.
    """


class StaleFence(RaftlockError):
    """A write carried an older fencing token than one already accepted."""


class OutcomeUnknown(RaftlockError):
    """The cluster no longer remembers whether this request was applied."""


class Unauthenticated(RaftlockError, PermissionError):
    """The call proved no identity the cluster knows (token or certificate)."""


class PermissionDenied(RaftlockError, PermissionError):
    """The caller's identity may not do this."""


class NotServed(RaftlockError, ConnectionError):
    """The endpoint is not a raftlock client port (a peer port, another service)."""


class Unavailable(RaftlockError, ConnectionError):
    """No node could serve the call in time (no leader, no quorum, or
    unreachable: then the message names each address tried and why)."""


class TlsError(RaftlockError):
    """A certificate, key or CA file cannot be read or used, or no TLS
    connection could be made with them: a certificate expired or not yet
    valid (this client's or a node's, with its dates), one from another
    CA, or TLS on one side only. The message says which keyword argument
    of ``Client`` to change (``cacert=``, ``cert=``, ``key=``)."""


class NodeError(RaftlockError, RuntimeError):
    """A ``raftlock.Node`` cannot start (its address in use, its data dir
    open in another node of this process or another, or damaged), or was
    used while not running."""


class InternalError(RaftlockError):
    """A bug or a broken disk on the server side."""


__all__ = [
    "InternalError",
    "InvalidArgument",
    "LeaseExpired",
    "LimitReached",
    "LockLost",
    "NodeError",
    "NotHeld",
    "NotServed",
    "OutcomeUnknown",
    "PermissionDenied",
    "RaftlockError",
    "StaleFence",
    "Timeout",
    "TlsError",
    "Unauthenticated",
    "Unavailable",
    "WaitEnded",
]
