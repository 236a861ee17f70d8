"""``raftlock.Node``: a raftlock node inside this Python process."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from raftlock._common import seconds
from raftlock._node_base import NodeBase
from raftlock._node_options import NodeOptions
from raftlock._scope import Scoped
from raftlock._sync import Client

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack


class Node(NodeBase[Client], Scoped):
    """A raftlock node run by this process, so an application's replicas
    form their own lock cluster with no server to operate.

    The keywords are ``raftlock serve``'s options, named as its flags with
    ``_`` for ``-`` (``Node.options()`` lists them) and read by the same
    parser: ``RAFTLOCK_*`` variables fill what is not passed, then the
    ``config=`` TOML file, then the defaults. A bad option raises
    :class:`~raftlock.InvalidArgument` and starts nothing.

    The node runs on Rust threads of its own, which never take the GIL: a
    thread holding it or a blocked event loop do not stall Raft, heartbeats
    or lease expiry.

    >>> node = raftlock.Node(id=1, data_dir="/var/lib/app/raftlock",  # doctest: +SKIP
    ...     initial_cluster="1=10.0.0.1:7380/10.0.0.1:7379,2=...,3=...",
    ...     join_token_file="/etc/app/join-token")
    >>> node.wait_ready(timeout=30)  # doctest: +SKIP
    >>> client = node.client()  # doctest: +SKIP

    Starts when made (binds its listeners, opens the data dir, starts Raft);
    raises :class:`~raftlock.NodeError` when it cannot (a port in use, a
    data dir another node has open, in this process or another).
    ``stop()``, leaving ``with``, or the interpreter's exit stop it in
    order.
    """

    def __init__(self, **options: Unpack[NodeOptions]) -> None:
        super().__init__(options, Client)
        self._native.start()
        self._started()

    def wait_ready(self, timeout: float | None = None) -> int:
        """Waits until this node knows a leader (so the cluster has a
        quorum and this node serves calls); answers the leader's id. Raises
        :class:`~raftlock.Timeout` after ``timeout`` seconds (``None``:
        waits until then, Ctrl-C interrupts)."""
        leader: int = self._native.wait_ready(seconds("timeout", timeout))
        return leader

    def stop(self) -> None:
        """Stops the node in order: no new client calls, running ones end
        (up to 5 s), Raft stops, storage is flushed, the data dir is free.
        From the call on, calls of this node's clients end at once with
        :class:`~raftlock.Unavailable` ("node N of this process is
        stopping"). Does nothing if already stopped."""
        self._native.stop()

    def _on_exit(self) -> None:
        self.stop()
