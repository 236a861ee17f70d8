"""A client paused while it waits for a lock must not use a grant it can
no longer prove valid: it is granted while stopped, its session lease
expires, another client takes the lock; when it resumes, entering the
lock's context raises LockLost instead of running the body inside the
other client's hold (issue: `raftlock lock` once did exactly that)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
import raftlock
from conftest import Cluster, wait_until

SYNC = """
    import sys, raftlock
    client = raftlock.Client(sys.argv[1], session_ttl=1)
    print("QUEUED", flush=True)
    try:
        with client.lock(sys.argv[2]) as lock:
            print("ENTERED", lock.fence, flush=True)
    except raftlock.LockLost as e:
        print("LOST", e, flush=True)
"""

ASYNC = """
    import asyncio, sys, raftlock, raftlock.asyncio
    async def main():
        client = raftlock.asyncio.Client(sys.argv[1], session_ttl=1)
        print("QUEUED", flush=True)
        try:
            async with client.lock(sys.argv[2]) as lock:
                print("ENTERED", lock.fence, flush=True)
        except raftlock.LockLost as e:
            print("LOST", e, flush=True)
    asyncio.run(main())
"""


@pytest.mark.parametrize("script", [SYNC, ASYNC], ids=["sync", "asyncio"])
def test_a_paused_waiter_never_enters_on_an_expired_grant(
    cluster: Cluster, client: raftlock.Client, other: raftlock.Client, script: str
) -> None:
    name = f"py/paused/{uuid.uuid4().hex[:8]}"
    holder = client.lock(name)
    holder.acquire()
    waiter = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), ",".join(cluster.endpoints), name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert waiter.stdout is not None
        assert waiter.stdout.readline().strip() == "QUEUED"

        def queued() -> bool:
            info = client.describe(name)
            return info is not None and len(info.waiters) == 1

        wait_until("the waiter queued", queued)
        waiter.send_signal(signal.SIGSTOP)
        holder.release()  # granted to the stopped waiter...

        def expired() -> bool:
            info = client.describe(name)
            return info is None or not info.holders

        wait_until("the stopped waiter's lease expired", expired)
        rival = other.lock(name)
        assert rival.acquire(timeout=10), "...and then to another client"
        waiter.send_signal(signal.SIGCONT)
        out, _ = waiter.communicate(timeout=30)
        assert out.startswith("LOST"), f"the resumed waiter entered: {out!r}"
        assert rival.owned()
        time.sleep(0.2)
        rival.release()
    finally:
        waiter.kill()
