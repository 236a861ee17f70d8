"""One connection to a raftlock cluster for grelmicro's backends: what
:class:`~raftlock.grelmicro.RaftlockProvider` is beside being grelmicro's
``Provider``, and what an adapter made without a provider opens itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

from typing_extensions import Self

from raftlock._scope import AsyncScoped
from raftlock.asyncio import Client


class RaftlockConnection(AsyncScoped):
    """A raftlock client opened with ``async with`` and closed after.

    Args:
        endpoints: client endpoints (default ``RAFTLOCK_ENDPOINTS``, else
            ``127.0.0.1:7379``).
        token, cacert, cert, key: as :class:`raftlock.asyncio.Client`'s
            (defaults from ``RAFTLOCK_TOKEN``, ``RAFTLOCK_CACERT``, ...).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str] | None = None,
        *,
        token: str | None = None,
        cacert: str | PathLike[str] | None = None,
        cert: str | PathLike[str] | None = None,
        key: str | PathLike[str] | None = None,
    ) -> None:
        self._endpoints = endpoints
        self._token = token
        self._tls = (cacert, cert, key)
        self._client: Client | None = None

    async def __aenter__(self) -> Self:
        if self._client is None:
            cacert, cert, key = self._tls
            self._client = Client(
                self._endpoints, token=self._token, cacert=cacert, cert=cert, key=key
            )
        return self

    async def _on_exit(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    @property
    def client(self) -> Client:
        """The open client; refused before ``async with``."""
        if self._client is None:
            raise RuntimeError(
                "RaftlockProvider is not open: use `async with provider:` "
                "or an adapter's `async with`"
            )
        return self._client
