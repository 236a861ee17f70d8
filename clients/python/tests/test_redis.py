"""raftlock.redis.Lock keeps redis-py's Lock contract."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import raftlock
from raftlock.redis import Lock, LockError, LockNotOwnedError


@pytest.fixture
def name() -> str:
    return f"py/redis/{uuid.uuid4().hex[:12]}"


def test_acquire_release_locked_owned(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    lock = Lock(client, name, timeout=10)
    assert not lock.locked()
    assert not lock.owned()
    assert lock.acquire(blocking=False)
    assert lock.locked()
    assert lock.owned()
    assert lock.fence > 0
    rival = Lock(other, name, timeout=10)
    assert not rival.acquire(blocking=False)
    assert not rival.acquire(blocking_timeout=0.2)
    assert rival.locked()
    assert not rival.owned()
    with pytest.raises(LockError):
        lock.acquire(blocking=False)  # held by this thread already
    lock.release()
    assert not lock.locked()
    with pytest.raises(LockError):
        lock.release()
    with rival:
        assert rival.owned()


def test_the_timeout_is_the_locks_own_ttl(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    lock = Lock(client, name, timeout=0.3)
    assert lock.acquire()
    rival = Lock(other, name, timeout=5)
    # Not kept alive: it ends 0.3 s after acquire and the waiter gets it.
    assert rival.acquire(blocking_timeout=10)
    with pytest.raises(LockNotOwnedError):
        lock.release()
    with pytest.raises(LockError):
        lock.extend(1)  # released (unsuccessfully): unlocked, as redis-py says
    rival.release()


def test_extend_and_reacquire(client: raftlock.Client, other: raftlock.Client, name: str) -> None:
    lock = Lock(client, name, timeout=0.5)
    assert lock.acquire()
    assert lock.extend(2)  # about 2.5 s left
    time.sleep(1.0)
    assert lock.owned(), "extended past its first timeout"
    left = client.time_to_live(lock.local.lease).remaining
    assert left is not None
    assert 0.8 < left <= 2.5
    assert lock.extend(0.2, replace_ttl=True)
    time.sleep(0.4)
    assert not lock.owned(), "replace_ttl shortened it"
    with pytest.raises(LockNotOwnedError):
        lock.extend(1)
    with pytest.raises(LockNotOwnedError):
        lock.release()

    lock = Lock(client, name, timeout=0.6)
    assert lock.acquire()
    for _ in range(4):
        time.sleep(0.3)
        assert lock.reacquire()
    assert lock.owned(), "reacquired every 0.3 s, alive after 1.2 s"
    lock.release()

    forever = Lock(client, name)
    with forever:
        with pytest.raises(LockError):
            forever.extend(1)
        time.sleep(3.5)  # past the session TTL: kept alive
        assert forever.owned()


def test_a_millisecond_lock(client: raftlock.Client, other: raftlock.Client, name: str) -> None:
    lock = Lock(client, name, timeout=0.001)
    assert lock.acquire()
    assert Lock(other, name, timeout=1).acquire(blocking_timeout=10)


def test_thread_local_tokens(client: raftlock.Client, name: str) -> None:
    lock = Lock(client, name, timeout=10)
    assert lock.acquire()
    errors: list[BaseException] = []

    def release_from_another_thread() -> None:
        try:
            lock.release()
        except LockError as e:
            errors.append(e)

    t = threading.Thread(target=release_from_another_thread)
    t.start()
    t.join()
    assert errors, "another thread cannot release this thread's lock"
    assert lock.owned()
    lock.release()


async def test_the_asyncio_lock(cluster, name: str) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    import raftlock.asyncio
    from raftlock.redis import AsyncLock

    a = raftlock.asyncio.Client(cluster.endpoints, session_ttl=3)
    b = raftlock.asyncio.Client(cluster.endpoints, session_ttl=3)
    lock = AsyncLock(a, name, timeout=0.5)
    assert await lock.acquire(blocking=False)
    assert await lock.owned()
    assert not await AsyncLock(b, name, timeout=5).acquire(blocking=False)
    assert await lock.extend(2)
    await asyncio.sleep(1.0)
    assert await lock.owned()
    assert await lock.reacquire()
    await lock.release()
    assert not await lock.locked()
    theirs = AsyncLock(b, name, timeout=0.3)
    assert await theirs.acquire()
    await asyncio.sleep(0.6)
    assert not await theirs.owned()
    with pytest.raises(LockNotOwnedError):  # expired before release, as redis-py says
        await theirs.release()
    with pytest.raises(LockError):
        await AsyncLock(b, name, timeout=5).release()  # unlocked
    await a.close()
    await b.close()
