"""pytest fixtures for testing an application that uses raftlock, against
real raftlock nodes run inside the test process (``raftlock.Node``): no
server to install or start.

The package registers this module as a pytest plugin (entry point
``pytest11``), so the fixtures are there in any project that has raftlock
and pytest installed:

- ``raftlock_node``: a one-node cluster (ready in tens of milliseconds), a
  :class:`LocalCluster`, new for each test;
- ``raftlock_cluster``: a three-node cluster, a :class:`LocalCluster`, new
  for each test (ready in about a second);
- ``raftlock_client``: a :class:`raftlock.Client` of ``raftlock_node``;
- ``raftlock_async_client``: a :class:`raftlock.asyncio.Client` of
  ``raftlock_node`` (when pytest-asyncio is installed).

Faults, to test what an application does when it loses a lock:
:meth:`LocalCluster.force_release` ends every hold of a name, as an
operator's ``raftlock force-release`` does (the holder's ``lost`` event is
set, its ``on_lost`` called); :meth:`LocalCluster.stop_node` stops a node
(its clients fail over to the others), :meth:`LocalCluster.restart_node`
starts it again on its data dir.

>>> def test_one_runner(raftlock_cluster):                     # doctest: +SKIP
...     with raftlock_cluster.client() as a, raftlock_cluster.client() as b:
...         with a.lock("jobs/report"):
...             assert not b.lock("jobs/report").acquire(timeout=0)
"""

from __future__ import annotations

import secrets
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

import raftlock
import raftlock.asyncio
from raftlock import NodeOptions


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    """``size`` raftlock nodes in this process, on free loopback ports and
    data dirs under ``directory``; ready (a leader elected) when made.

    Args:
        size: how many nodes (1, or 3 to survive the loss of one).
        directory: where their data dirs go (default: a temporary
            directory, removed by :meth:`stop`).
        timeout: seconds to wait for a leader.
    """

    def __init__(
        self, size: int = 1, directory: Path | None = None, *, timeout: float = 30.0
    ) -> None:
        if size < 1:
            raise raftlock.InvalidArgument(f"size must be at least 1, not {size}")
        self._owns_dir = directory is None
        self.dir = (
            Path(tempfile.mkdtemp(prefix="raftlock-test-")) if directory is None else directory
        )
        ports = [(_free_port(), _free_port()) for _ in range(size)]
        self.endpoints = [f"127.0.0.1:{client}" for _, client in ports]
        # One join token for the whole cluster (a one-node cluster needs none).
        join_token = "rlj1-" + secrets.token_hex(32)
        self._options: dict[int, NodeOptions] = {}
        for i, (peer, client) in enumerate(ports, start=1):
            options: NodeOptions = {
                "id": i,
                "data_dir": str(self.dir / f"node{i}"),
                "client_addr": f"127.0.0.1:{client}",
                "peer_addr": f"127.0.0.1:{peer}",
            }
            if size > 1:
                options["initial_cluster"] = ",".join(
                    f"{n}=127.0.0.1:{p}/127.0.0.1:{c}" for n, (p, c) in enumerate(ports, start=1)
                )
                options["join_token"] = join_token
            self._options[i] = options
        self.nodes: dict[int, raftlock.Node] = {}
        try:
            for i, options in self._options.items():
                self.nodes[i] = raftlock.Node(**options)
            for node in self.nodes.values():
                node.wait_ready(timeout=timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def node(self) -> raftlock.Node:
        """The first node still running."""
        for node in self.nodes.values():
            if node.running:
                return node
        raise raftlock.NodeError("no node of this cluster is running")

    def client(self, *, session_ttl: float | None = 3.0) -> raftlock.Client:
        """A new :class:`raftlock.Client` of every node (it fails over
        between them); close it, or use it in ``with``."""
        return raftlock.Client(self.endpoints, session_ttl=session_ttl)

    def async_client(self, *, session_ttl: float | None = 3.0) -> raftlock.asyncio.Client:
        """A new :class:`raftlock.asyncio.Client` of every node."""
        return raftlock.asyncio.Client(self.endpoints, session_ttl=session_ttl)

    def force_release(self, name: str) -> int:
        """Ends every hold of ``name`` as an operator does (``raftlock
        force-release``): their holders lose the lock. Answers how many
        holds ended."""
        with raftlock.Client(self.endpoints, token=raftlock.admin_token(self._data_dir())) as admin:
            return admin.force_release(name)

    def stop_node(self, node_id: int) -> None:
        """Stops node ``node_id`` (its data dir is kept)."""
        self.nodes[node_id].stop()

    def restart_node(self, node_id: int, *, timeout: float = 30.0) -> raftlock.Node:
        """Starts node ``node_id`` again on its data dir; answers it, ready."""
        self.nodes[node_id].stop()
        node = self.nodes[node_id] = raftlock.Node(**self._options[node_id])
        node.wait_ready(timeout=timeout)
        return node

    def leader_id(self) -> int | None:
        """The Raft leader's id, as a running node knows it."""
        return self.node.leader_id

    def _data_dir(self) -> str:
        return str(self._options[self.node.id]["data_dir"])

    def stop(self) -> None:
        """Stops every node and removes the directory it made."""
        for node in self.nodes.values():
            node.stop()
        if self._owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture
def raftlock_node(tmp_path: Path) -> Iterator[LocalCluster]:
    """A one-node raftlock cluster in this process, new for each test."""
    with LocalCluster(1, tmp_path / "raftlock") as cluster:
        yield cluster


@pytest.fixture
def raftlock_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """A three-node raftlock cluster in this process, new for each test."""
    with LocalCluster(3, tmp_path / "raftlock") as cluster:
        yield cluster


@pytest.fixture
def raftlock_client(raftlock_node: LocalCluster) -> Iterator[raftlock.Client]:
    """A :class:`raftlock.Client` of ``raftlock_node`` (session TTL 3 s)."""
    with raftlock_node.client() as client:
        yield client


if find_spec("pytest_asyncio") is not None:
    import pytest_asyncio

    @pytest_asyncio.fixture
    async def raftlock_async_client(
        raftlock_node: LocalCluster,
    ) -> AsyncIterator[raftlock.asyncio.Client]:
        """A :class:`raftlock.asyncio.Client` of ``raftlock_node``."""
        client = raftlock_node.async_client()
        try:
            yield client
        finally:
            await client.close()


__all__ = ["LocalCluster"]
