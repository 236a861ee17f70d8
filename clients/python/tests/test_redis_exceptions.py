"""raftlock.redis's exceptions are redis-py's where redis-py is installed,
and exist (as ValueError, as redis-py's) where it is not."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
import raftlock
from raftlock.errors import RaftlockError
from raftlock.redis import AsyncLock, Lock, LockError, LockNotOwnedError


def test_except_redis_lock_error_catches_ours(client: raftlock.Client) -> None:
    """Without the redis-py bases (`class LockError(RaftlockError,
    ValueError)`, as before) neither `except` fires and the test fails
    with raftlock's LockError escaping."""
    redis_exceptions = pytest.importorskip("redis.exceptions")
    name = f"py/redis-exc/{uuid.uuid4().hex[:12]}"
    assert issubclass(LockError, redis_exceptions.LockError)
    assert issubclass(LockNotOwnedError, redis_exceptions.LockNotOwnedError)
    assert issubclass(LockError, redis_exceptions.RedisError)
    assert issubclass(LockError, RaftlockError)
    assert issubclass(LockError, ValueError)

    caught: list[BaseException] = []
    try:
        Lock(client, name, timeout=5).release()  # never acquired
    except redis_exceptions.LockError as e:
        caught.append(e)
    assert len(caught) == 1
    assert caught[0].lock_name == name  # type: ignore[attr-defined]
    assert "unlocked" in str(caught[0])

    lock = Lock(client, name, timeout=0.2)
    assert lock.acquire()
    time.sleep(0.5)  # its own TTL ends
    try:
        lock.release()
    except redis_exceptions.LockNotOwnedError as e:
        caught.append(e)
    assert len(caught) == 2
    assert isinstance(caught[1], LockNotOwnedError)


async def test_except_redis_lock_error_catches_the_asyncio_locks(aclient) -> None:  # type: ignore[no-untyped-def]
    redis_exceptions = pytest.importorskip("redis.exceptions")
    name = f"py/redis-exc/{uuid.uuid4().hex[:12]}"
    with pytest.raises(redis_exceptions.LockError):
        await AsyncLock(aclient, name, timeout=5).release()


def test_without_redis_py_the_exceptions_still_exist() -> None:
    """Where `import redis` fails, the module imports and its exceptions are
    ValueError and RaftlockError, as documented (a fresh interpreter, with
    `redis` made unimportable)."""
    script = """
import sys
sys.modules["redis"] = None  # import redis raises ImportError
import raftlock.redis as r
from raftlock.errors import RaftlockError
assert issubclass(r.LockError, ValueError) and issubclass(r.LockError, RaftlockError)
assert issubclass(r.LockNotOwnedError, r.LockError)
assert "redis" not in {c.__module__.split(".")[0] for c in r.LockNotOwnedError.__mro__}
e = r.LockNotOwnedError("gone", "jobs")
assert (e.message, e.lock_name, str(e)) == ("gone", "jobs", "gone")
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
