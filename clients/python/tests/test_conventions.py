"""Python's conventions: `timeout=0` is one try, durations in errors are
seconds and name the argument (with nothing left held), and reprs read as
Python (None, bytes, lists)."""

from __future__ import annotations

import re
import threading
import time
import uuid
from pathlib import Path

import pytest
import raftlock
import raftlock.asyncio
from conftest import free_port
from raftlock.redis import AsyncLock as RedisAsyncLock
from raftlock.redis import Lock as RedisLock


@pytest.fixture
def name() -> str:
    return f"py/conv/{uuid.uuid4().hex[:12]}"


def test_timeout_zero_is_one_try(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    """Without the fix `acquire(timeout=0)` raised InvalidArgument ("timeout
    must be a positive number of seconds, not 0"), and redis-py's
    `blocking_timeout=0` sent a zero wait to the server."""
    free = client.lock(name)
    assert free.acquire(timeout=0) is True  # free: taken in the one try
    rival = other.lock(name)
    assert rival.acquire(timeout=0) is False  # busy: no wait, no error
    assert other.lock(name, timeout=0).acquire() is False  # as the lock's default
    permit = client.semaphore(f"{name}/sem", 1)
    assert permit.acquire(timeout=0)
    assert not other.semaphore(f"{name}/sem", 1).acquire(timeout=0)
    permit.release()
    free.release()
    assert rival.acquire(timeout=0) is True
    rival.release()

    mine = RedisLock(client, f"{name}/redis", timeout=10)
    assert mine.acquire(blocking_timeout=0)
    theirs = RedisLock(other, f"{name}/redis", timeout=10)
    assert theirs.acquire(blocking_timeout=0) is False
    assert RedisLock(other, f"{name}/redis", timeout=10, blocking_timeout=0).acquire() is False
    mine.release()
    assert theirs.acquire(blocking_timeout=0)
    theirs.release()


def test_campaign_timeout_zero_is_one_try(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    """`campaign(timeout=0)` leads a free election and raises `Timeout` at
    once on a led one, keeping no place: nobody leads after the leader
    resigns. Before, `timeout=0` raised InvalidArgument ("timeout must be
    a positive number of seconds, not 0")."""
    leading = client.election(name).campaign(b"a", timeout=0)
    started = time.monotonic()
    with pytest.raises(raftlock.Timeout, match="campaign\\(timeout=0\\) tried once"):
        other.election(name).campaign(b"b", timeout=0)
    with pytest.raises(raftlock.Timeout):
        raftlock.Election(other, name, timeout=0).campaign(b"b")
    assert time.monotonic() - started < 10  # no wait (a generous bound for a loaded machine)
    leading.resign()
    assert client.election(name).leader() is None  # the tries kept no place
    assert other.election(name).campaign(b"b", timeout=0).fence > leading.fence


async def test_timeout_zero_is_one_try_in_asyncio(cluster, name: str) -> None:  # type: ignore[no-untyped-def]
    a = raftlock.asyncio.Client(cluster.endpoints, session_ttl=3)
    b = raftlock.asyncio.Client(cluster.endpoints, session_ttl=3)
    try:
        held = a.lock(name)
        assert await held.acquire(timeout=0) is True
        assert await b.lock(name).acquire(timeout=0) is False
        await held.release()
        assert await b.lock(name).acquire(timeout=0) is True

        mine = RedisAsyncLock(a, f"{name}/redis", timeout=10)
        assert await mine.acquire(blocking_timeout=0)
        assert (
            await RedisAsyncLock(b, f"{name}/redis", timeout=10).acquire(blocking_timeout=0)
            is False
        )
        await mine.release()

        leading = await a.election(f"{name}/e").campaign(b"a", timeout=0)
        with pytest.raises(raftlock.Timeout):
            await b.election(f"{name}/e").campaign(b"b", timeout=0)
        await leading.resign()
        assert await a.election(f"{name}/e").leader() is None
        assert (await b.election(f"{name}/e").campaign(b"b", timeout=0)).fence > leading.fence
    finally:
        await a.close()
        await b.close()


def test_out_of_range_durations_speak_seconds_and_hold_nothing(
    client: raftlock.Client, name: str
) -> None:
    """Without the check before the call the server's message came back in
    milliseconds ("ttl 1000000000000 ms is outside 1..=86400000 ms"), and
    without naming redis-py's `timeout` or `additional_time`."""
    bad = [
        (
            lambda: client.lock(name, ttl=1e9).acquire(),
            "ttl 1000000000 s is outside 0.001..86400 s",
        ),
        (lambda: client.lock(name, ttl=0.0001).acquire(), "ttl 0.0001 s is outside 0.001..86400 s"),
        (lambda: client.grant_lease(1e9), "ttl 1000000000 s is outside 0.001..86400 s"),
        (
            lambda: client.lock(name, lock_delay=120).acquire(),
            "lock_delay 120 s is above the 60 s maximum",
        ),
        (
            lambda: RedisLock(client, name, timeout=1e9),
            "timeout 1000000000 s is outside 0.001..86400 s",
        ),
        (lambda: RedisLock(client, name, timeout=0), "timeout 0 s is outside 0.001..86400 s"),
    ]
    bad += [
        (
            lambda: raftlock.Client(client.endpoints, session_ttl=1e9),
            "session_ttl 1000000000 s is outside 0.1..86400 s",
        ),
        (
            lambda: raftlock.Client(client.endpoints, session_ttl=0.05),
            "session_ttl 0.05 s is outside 0.1..86400 s",
        ),
    ]
    for call, message in bad:
        with pytest.raises(raftlock.InvalidArgument, match=re.escape(message)):
            call()
    lease = client.grant_lease(5)
    with pytest.raises(raftlock.InvalidArgument, match=re.escape("ttl 100000 s is outside")):
        client.set_lease_ttl(lease, 100_000)
    assert client.time_to_live(lease).granted_ttl == 5.0  # unchanged
    client.revoke(lease)

    held = RedisLock(client, name, timeout=10)
    assert held.acquire()
    with pytest.raises(
        raftlock.InvalidArgument, match=r"^additional_time 100009\.\d+ s is outside"
    ):
        held.extend(100_000)
    assert held.owned()  # the refused extend changed nothing
    held.release()
    # Nothing was left held by any refused call.
    info = client.describe(name)
    assert info is None or not info.holders


def test_reprs_read_as_python(client: raftlock.Client, other: raftlock.Client, name: str) -> None:
    """Without Python reprs these read `LeaseTtl(granted_ttl=5, remaining=Some(4.99))`,
    `LeaderInfo(owner="..", fence=3, value="v")` and `LockInfo(name="..",
    holders=1, waiters=0)`."""
    lease = client.grant_lease(5)
    ttl = repr(client.time_to_live(lease))
    assert re.fullmatch(
        r"LeaseTtl\(granted_ttl=5\.0, remaining=[0-9.]+, attachments=\[\]\)", ttl
    ), ttl
    client.revoke(lease)

    election = client.election(f"{name}/e")
    with election.campaign(b"v\x00"):
        leader = repr(election.leader())
        assert re.fullmatch(
            r"LeaderInfo\(owner='[^']+', lease=\d+, fence=\d+, value=b'v\\x00'\)", leader
        ), leader

    with client.lock(name) as held:
        waiter = other.lock(name)
        assert waiter.acquire(blocking=False) is False
        info = repr(client.describe(name))
        assert info.startswith(
            f"LockInfo(name='{name}', semaphore_limit=0, holders=[Holder(owner='"
        ), info
        assert f"fence={held.fence}, count=1, held=" in info, info
        assert "value=b'', lock_delay=0.0)], waiters=[], delayed=0.0)" in info, info

        granted: list[bool] = []
        waiting = threading.Thread(target=lambda: granted.append(waiter.acquire(timeout=30)))
        waiting.start()
        deadline = time.monotonic() + 30
        while not (described := client.describe(name)) or not described.waiters:
            assert time.monotonic() < deadline, "the waiter queues"
            time.sleep(0.05)
        shown = repr(described.waiters)
        assert re.fullmatch(
            rf"\[Waiter\(owner='{waiter.owner}', lease=\d+, mode='exclusive', permits=\d+, "
            r"waited=[0-9.e-]+\)\]",
            shown,
        ), shown
    waiting.join(30)
    assert granted == [True]
    waiter.release()

    record = repr(client._native.coordination.lead(f"{name}/lead", "w1", 5.0, {"k": "v"}))
    assert re.fullmatch(
        r"LeadRecord\(holder='w1', ttl=5\.0, acquired_at_ms=\d+, renewed_at_ms=\d+, "
        r"transitions=\d+, metadata=\{'k': 'v'\}\)",
        record,
    ), record


class _Recording:
    """A client whose native calls are recorded by name."""

    def __init__(self, client: raftlock.Client) -> None:
        self.calls: list[str] = []
        native = client._native
        recording = self

        class Native:
            def __getattr__(self, attr: str) -> object:
                recording.calls.append(attr)
                return getattr(native, attr)

        self._native = Native()


def test_redis_blocking_timeout_zero_is_one_call(client: raftlock.Client, name: str) -> None:
    """redis-py's `blocking_timeout=0` is one try: one try-lock call, as
    `blocking=False`. Without the fix it was a waiting acquire with a zero
    wait: a lease granted, a queued acquire and a revoke (three calls)."""
    recorded = _Recording(client)
    lock = RedisLock(recorded, name, timeout=10)  # type: ignore[arg-type]
    assert lock.acquire(blocking_timeout=0)
    assert recorded.calls == ["acquire_with_ttl"]
    lock.release()


def test_node_status_repr_reads_as_python(tmp_path: Path) -> None:
    """Without Python reprs: `NodeStatus(id=1, role="leader", term=1,
    leader=1, applied_index=2, members=1)`, the members a count."""
    addrs = {f"{k}_addr": f"127.0.0.1:{free_port()}" for k in ("client", "peer")}
    with raftlock.Node(data_dir=tmp_path / "data", **addrs) as node:
        node.wait_ready(timeout=30)
        shown = repr(node.status())
        with pytest.raises(raftlock.InvalidArgument, match=r"^session_ttl 1000000000 s is outside"):
            node.client(session_ttl=1e9)
    member = (
        f"Member(id=1, peer_addr='{addrs['peer_addr']}', "
        f"client_addr='{addrs['client_addr']}', voter=True)"
    )
    assert re.fullmatch(
        r"NodeStatus\(id=1, role='leader', term=\d+, leader=1, last_log_index=\d+, "
        r"applied_index=\d+, snapshot_index=\d+, members=\[" + re.escape(member) + r"\]\)",
        shown,
    ), shown
