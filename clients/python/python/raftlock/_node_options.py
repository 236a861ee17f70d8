"""The keyword arguments of ``raftlock.Node`` and ``raftlock.asyncio.Node``:
``raftlock serve``'s options, each named as its flag with ``_`` for ``-``
and typed, so a type checker catches a misspelled or mistyped option
before the node runs. ``tests/test_node_options.py`` holds them to
``raftlock serve --help``: a flag added there and not here fails it.

``None`` leaves an option unset (the ``RAFTLOCK_*`` variable, the
``config=`` file or the default applies).
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TypedDict

#: A file or directory: text or a path object.
Path = str | PathLike[str]


class NodeOptions(TypedDict, total=False):
    """Every option of ``raftlock serve`` (``raftlock serve --help`` says
    what each does)."""

    config: Path | None
    id: int | None
    data_dir: Path | None
    client_addr: str | None
    peer_addr: str | None
    advertise_client_addr: str | None
    advertise_peer_addr: str | None
    #: ``"1=PEER/CLIENT,2=..."`` or a list of ``"ID=PEER/CLIENT"``.
    initial_cluster: str | Sequence[str] | None
    join: bool | None
    heartbeat_ms: int | None
    election_timeout_ms: int | None
    keep_entries_after_snapshot: int | None
    leader_wait_ms: int | None
    lock_delay_ms: int | None
    snapshot_after: int | None
    max_peer_message_bytes: int | None
    max_client_connections: int | None
    max_connections_per_ip: int | None
    handshake_timeout_ms: int | None
    idle_timeout_ms: int | None
    quota_leases: int | None
    quota_clients: int | None
    quota_waiters: int | None
    quota_streams: int | None
    #: ``"HOST:PORT"``, or ``"off"`` for no admin listener.
    admin_addr: str | None
    admin_hosts: str | Sequence[str] | None
    unsafe_no_fsync: bool | None
    tls_cert: Path | None
    tls_key: Path | None
    tls_ca: Path | None
    client_cert_auth: bool | None
    auth_file: Path | None
    join_token: str | None
    join_token_file: Path | None
    insecure: bool | None
