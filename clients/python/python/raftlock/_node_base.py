"""What the blocking and the asyncio ``Node`` share: their options, read as
``raftlock serve`` reads its flags, the properties, and the stop at
interpreter exit."""

from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Generic

from raftlock import _native
from raftlock._base import ClientT
from raftlock._common import seconds, session_ttl_seconds
from raftlock._native import NodeStatus
from raftlock.errors import InvalidArgument

# Nodes still running at interpreter exit are stopped in order then, as
# stop() would (weakly held: a node nobody refers to stops by itself).
_running: weakref.WeakSet[_native.NativeNode] = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    for node in list(_running):
        node.stop_at_exit()


def native_options(options: Mapping[str, object]) -> list[tuple[str, str | bool]]:
    """The keywords as ``(name, value)`` for the native node: switches as
    ``bool``, everything else as the text ``raftlock serve`` would read
    (checked here too: a caller without a type checker may pass anything)."""
    out: list[tuple[str, str | bool]] = []
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, (bool, str)):
            out.append((name, value))
        elif isinstance(value, int):
            out.append((name, str(value)))
        elif isinstance(value, PathLike):
            out.append((name, os.fspath(value)))
        elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
            out.append((name, ",".join(value)))
        else:
            raise InvalidArgument(
                f"{name}= must be text, a number, a path, True/False or a list of text, "
                f"not {value!r}"
            )
    return out


def option_names() -> list[str]:
    """The keywords ``Node`` takes: ``raftlock serve``'s options."""
    return [name for name, _switch, _help in _native.NativeNode.options()]


class NodeBase(Generic[ClientT]):
    """The properties of a node (see :class:`raftlock.Node`) and its
    clients, of the class ``client_class`` (the blocking or the asyncio
    ``Client``)."""

    def __init__(self, options: Mapping[str, object], client_class: type[ClientT]) -> None:
        self._native = _native.NativeNode(native_options(options))
        self._client_class = client_class

    def _started(self) -> None:
        _running.add(self._native)

    @staticmethod
    def options() -> list[str]:
        """The keyword arguments a node takes: every option of ``raftlock
        serve``, its flag name with ``_`` for ``-``."""
        return option_names()

    @property
    def id(self) -> int:
        """This node's Raft id."""
        return self._native.id

    @property
    def data_dir(self) -> str:
        """The node's data directory."""
        return os.fspath(self._native.data_dir)

    @property
    def running(self) -> bool:
        """Whether the node is started and not stopped."""
        return self._native.is_running()

    @property
    def client_addr(self) -> str:
        """The bound client API address (``host:port``)."""
        return self._native.addresses()[0]

    @property
    def peer_addr(self) -> str:
        """The bound peer (Raft) address."""
        return self._native.addresses()[1]

    @property
    def admin_addr(self) -> str | None:
        """The admin listener's address (metrics, health, status page), or
        ``None`` when off (the default; ``admin_addr=`` turns it on)."""
        return self._native.addresses()[2]

    def status(self) -> NodeStatus:
        """This node's view of the cluster: role, term, leader, indexes,
        members. Answered locally, without asking the other nodes."""
        return self._native.status()

    @property
    def leader_id(self) -> int | None:
        """The Raft leader's id as this node knows it, or ``None``."""
        return self.status().leader

    @property
    def is_leader(self) -> bool:
        """Whether this node is the Raft leader now (not an election of the
        application: use ``client().leader_election(...)`` for that)."""
        status = self.status()
        return status.leader == status.id and status.role == "leader"

    def client(
        self,
        *,
        session_ttl: float | None = None,
        safety_margin: float | None = None,
        retry_for: float | None = None,
        token: str | None = None,
    ) -> ClientT:
        """A client of this node (:class:`raftlock.Client`, or
        :class:`raftlock.asyncio.Client` for an asyncio node), which
        forwards calls to the leader; with TLS it presents the node's own
        certificate. The keywords are ``Client``'s."""
        native = self._native.client(
            session_ttl=session_ttl_seconds(session_ttl),
            safety_margin=seconds("safety_margin", safety_margin),
            retry_for=seconds("retry_for", retry_for),
            token=token if token is not None else os.environ.get("RAFTLOCK_TOKEN"),
        )
        return self._client_class._wrap(native)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<{type(self).__module__}.{type(self).__qualname__} id={self.id} {state}>"
