"""``raftlock.asyncio.Node``: a raftlock node inside this Python process,
for asyncio applications."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from raftlock._aio_client import Client
from raftlock._common import seconds
from raftlock._node_base import NodeBase
from raftlock._node_options import NodeOptions
from raftlock._scope import AsyncScoped

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack


class Node(NodeBase[Client], AsyncScoped):
    """:class:`raftlock.Node` for asyncio: the same keywords and
    properties; ``start``, ``wait_ready`` and ``stop`` are awaited.

    Made, it has read its options (a bad one raises
    :class:`~raftlock.InvalidArgument`) but not started: ``await
    node.start()``, or ``async with raftlock.asyncio.Node(...) as node:``,
    which stops it on the way out. In a uvicorn/FastAPI app, start it in
    the lifespan and stop it there: uvicorn turns SIGTERM into the
    lifespan's shutdown.
    """

    def __init__(self, **options: Unpack[NodeOptions]) -> None:
        super().__init__(options, Client)

    async def start(self) -> Node:
        """Binds the listeners, opens the data dir and starts Raft; raises
        :class:`~raftlock.NodeError` when it cannot."""
        await self._native.start(aio=True)
        self._started()
        return self

    async def wait_ready(self, timeout: float | None = None) -> int:
        """Waits until this node knows a leader; answers its id. Raises
        :class:`~raftlock.Timeout` after ``timeout`` seconds."""
        leader: int = await self._native.wait_ready(seconds("timeout", timeout), aio=True)
        return leader

    async def stop(self) -> None:
        """Stops the node in order (see :meth:`raftlock.Node.stop`)."""
        await self._native.stop(aio=True)

    async def __aenter__(self) -> Node:
        return await self.start()

    async def _on_exit(self) -> None:
        await self.stop()
