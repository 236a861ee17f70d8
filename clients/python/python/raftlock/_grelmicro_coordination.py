"""grelmicro >= 0.27's coordination backends on raftlock. Imported through
:mod:`raftlock.grelmicro`.

Every backend call is one call to the cluster's Coordination service, so
what grelmicro's protocols promise is decided by the replicated state
machine, never in this process:

- a lock, a reader, a writer and a leader are holds on leases of their
  own, made, renewed (the lease's TTL set to the new duration) and ended
  by the server; a token's hold is found again by the token, from any
  process;
- ``acquire`` answers raftlock's fence, which only grows per name (a
  renewal keeps it); ``acquire_write`` answers the fence and whether the
  writer before never released (``poisoned``); readers get the fence of the
  latest write grant (the generation);
- a refused writer's intent lives on a lease of its own and keeps new
  readers out, while readers already in renew;
- an election's record (holder, transitions, acquired and renewed times
  from the cluster leader's clock, metadata) is replicated;
- a schedule fire is claimed by one compare-and-set in the log;
- ``locked``, ``owned``, ``state``, ``get`` and ``last_fired`` are
  linearizable reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime, timezone

from grelmicro.coordination._protocol import (
    LeaderRecord,
    LockBackend,
    ReadWriteLockBackend,
    ReadWriteLockState,
    ScheduleBackend,
    WriteGrant,
)
from typing_extensions import Self

from raftlock._common import lease_ttl as _ttl
from raftlock._grelmicro_connection import RaftlockConnection
from raftlock._native import LeadRecord
from raftlock._scope import AsyncScoped


class _Adapter(AsyncScoped):
    """What every adapter shares: its provider, opened and closed with the
    adapter when the adapter made it (``async with``, see
    :mod:`raftlock._scope`), and the loop it was opened on."""

    def __init__(self, provider: RaftlockConnection | None) -> None:
        self._owns_provider = provider is None
        self._provider = provider if provider is not None else RaftlockConnection()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def provider(self) -> RaftlockConnection:
        """The provider (or, made without one, the connection) this adapter
        calls through."""
        return self._provider

    async def __aenter__(self) -> Self:
        self._loop = asyncio.get_running_loop()
        if self._owns_provider:
            await self._provider.__aenter__()
        return self

    async def _on_exit(self) -> None:
        if self._owns_provider:
            await self._provider._on_exit()

    async def _holds(self, name: str, token: str, mode: str | None) -> bool:
        """Whether ``token`` holds ``name`` (in ``mode``, if given)."""
        info = await self._provider.client.describe(name)
        return info is not None and any(
            h.owner == token and (mode is None or h.mode == mode) for h in info.holders
        )


class RaftlockLockAdapter(_Adapter, LockBackend):
    """grelmicro's ``LockBackend`` on raftlock: ``Lock`` and ``TaskLock``."""

    def __init__(self, *, provider: RaftlockConnection | None = None) -> None:
        super().__init__(provider)

    async def acquire(self, *, name: str, token: str, duration: float) -> int | None:
        """Takes ``name`` for ``token`` for ``duration`` seconds, or renews
        the hold ``token`` has; raftlock's fence, ``None`` when another
        token holds it."""
        native = self._provider.client._native.coordination
        held: tuple[int, int] | None = await native.hold(name, token, _ttl(duration), aio=True)
        return None if held is None else held[0]

    async def release(self, *, name: str, token: str) -> bool:
        """Ends ``token``'s hold of ``name``; ``False`` if it held none."""
        return bool(await self._provider.client._native.coordination.unhold(name, token, aio=True))

    async def locked(self, *, name: str) -> bool:
        """Whether anyone holds ``name``."""
        info = await self._provider.client.describe(name)
        return info is not None and bool(info.holders)

    async def owned(self, *, name: str, token: str) -> bool:
        """Whether ``token`` holds ``name``."""
        return await self._holds(name, token, None)


class RaftlockReadWriteLockAdapter(_Adapter, ReadWriteLockBackend):
    """grelmicro's ``ReadWriteLockBackend`` on raftlock: ``ReadWriteLock``."""

    def __init__(self, *, provider: RaftlockConnection | None = None) -> None:
        super().__init__(provider)

    async def _step(
        self, op: str, name: str, token: str, duration: float = 1.0, intent: bool = False
    ) -> tuple[bool, int, bool]:
        step: tuple[bool, int, bool] = await self._provider.client._native.coordination.read_write(
            name, token, op, _ttl(duration), intent, aio=True
        )
        return step

    async def acquire_read(self, *, name: str, token: str, duration: float) -> int | None:
        """Joins the readers (or renews ``token``'s read lease): the
        generation, ``None`` while a writer holds or waits."""
        granted, generation, _ = await self._step("read", name, token, duration)
        return generation if granted else None

    async def acquire_write(
        self, *, name: str, token: str, duration: float, intent: bool = True
    ) -> WriteGrant | None:
        """Takes ``name`` alone (or renews ``token``'s write lease);
        ``None`` while others hold it, and then, with ``intent``, new
        readers are kept out until ``token`` comes back or gives up."""
        granted, fence, poisoned = await self._step("write", name, token, duration, intent)
        return WriteGrant(fencing_token=fence, poisoned=poisoned) if granted else None

    async def release_read(self, *, name: str, token: str) -> bool:
        """Drops ``token``'s read lease."""
        return (await self._step("release_read", name, token))[0]

    async def release_write(self, *, name: str, token: str) -> bool:
        """Drops ``token``'s write lease: a clean release."""
        return (await self._step("release_write", name, token))[0]

    async def cancel_intent(self, *, name: str, token: str) -> bool:
        """Withdraws ``token``'s write intent."""
        return (await self._step("cancel_intent", name, token))[0]

    async def downgrade(self, *, name: str, token: str, duration: float) -> int | None:
        """Turns ``token``'s write lease into a read lease of ``duration``,
        no writer between: the generation, ``None`` if it did not write."""
        granted, generation, _ = await self._step("downgrade", name, token, duration)
        return generation if granted else None

    async def state(self, *, name: str) -> ReadWriteLockState:
        """The lock as it stands (live leases and intents only)."""
        native = self._provider.client._native.coordination
        generation, writing, readers, waiting = await native.read_write_state(name, aio=True)
        return ReadWriteLockState(
            generation=generation,
            writing=writing,
            readers=readers,
            waiting_writers=waiting,
        )

    async def owned_read(self, *, name: str, token: str) -> bool:
        """Whether ``token`` holds a read lease."""
        return await self._holds(name, token, "shared")

    async def owned_write(self, *, name: str, token: str) -> bool:
        """Whether ``token`` holds the write lease."""
        return await self._holds(name, token, "exclusive")


def _leader_record(record: LeadRecord) -> LeaderRecord:
    def at(ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)

    return LeaderRecord(
        holder=record.holder,
        lease_duration=record.ttl,
        acquired_at=at(record.acquired_at_ms),
        renewed_at=at(record.renewed_at_ms),
        transitions=record.transitions,
        metadata=dict(record.metadata),
    )


class RaftlockLeaderElectionAdapter(_Adapter):
    """grelmicro's ``LeaderElectionBackend`` on raftlock: ``LeaderElection``."""

    def __init__(self, *, provider: RaftlockConnection | None = None) -> None:
        super().__init__(provider)

    async def acquire_or_renew(
        self,
        *,
        name: str,
        token: str,
        duration: float,
        metadata: Mapping[str, str] | None = None,
    ) -> LeaderRecord:
        """Leads ``name`` as ``token`` (or renews its lead): the record,
        whoever leads; ``token`` leads when it is the record's holder (an
        empty holder: nobody leads)."""
        native = self._provider.client._native.coordination
        record: LeadRecord = await native.lead(
            name, token, _ttl(duration), dict(metadata or {}), aio=True
        )
        return _leader_record(record)

    async def release(self, *, name: str, token: str) -> bool:
        """Ends ``token``'s lead of ``name`` and its record."""
        return bool(await self._provider.client._native.coordination.unhold(name, token, aio=True))

    async def get(self, *, name: str) -> LeaderRecord | None:
        """The record while someone leads ``name``."""
        native = self._provider.client._native.coordination
        record: LeadRecord | None = await native.leader_record(name, aio=True)
        return None if record is None else _leader_record(record)


class RaftlockScheduleAdapter(_Adapter, ScheduleBackend):
    """grelmicro's ``ScheduleBackend`` on raftlock: one claim wins each fire."""

    def __init__(self, *, provider: RaftlockConnection | None = None) -> None:
        super().__init__(provider)

    async def claim(self, name: str, due: float) -> bool:
        """Claims the fire of ``name`` at ``due`` (UTC epoch seconds)."""
        return bool(
            await self._provider.client._native.coordination.claim_fire(name, due, aio=True)
        )

    async def last_fired(self, name: str) -> float | None:
        """The last fire claimed, ``None`` if never."""
        fired: float | None = await self._provider.client._native.coordination.last_fired(
            name, aio=True
        )
        return fired


__all__ = [
    "RaftlockLeaderElectionAdapter",
    "RaftlockLockAdapter",
    "RaftlockReadWriteLockAdapter",
    "RaftlockScheduleAdapter",
]
