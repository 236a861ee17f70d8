"""grelmicro's TaskLock semantics: `run` returns to its caller when the job
ends, and the lock stays held until `min_hold` has passed since it was
taken (then it is free, long before `max_hold`), in both APIs and after
the interpreter that ran the job has exited. Before, `run` returned only
once `min_hold` had passed (60.02 s for `min_hold=60`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
import raftlock
import raftlock.asyncio
from conftest import Cluster

MIN_HOLD = 6.0
MAX_HOLD = 120.0
#: How long past `min_hold` the lock may take to be free: slack for a
#: loaded machine, far below `max_hold`.
SLACK = 20.0


@pytest.fixture
def name() -> str:
    return f"task-{uuid.uuid4().hex[:8]}"


def taken_after_min_hold(other: raftlock.Client, name: str, since: float) -> float:
    """Polls another worker's try-lock until it gets the lock: it must not
    before `min_hold` has passed since `since`. Answers when it did."""
    theirs = other.task_lock(name, min_hold=0.1, max_hold=MAX_HOLD)
    while True:
        guard = theirs.try_acquire()
        now = time.monotonic()
        if guard is not None:
            guard.finish()
            assert now - since >= MIN_HOLD, f"taken {now - since:.1f}s after the first worker"
            return now - since
        assert now - since < MIN_HOLD + SLACK, "still held long after min_hold"
        time.sleep(0.2)


def test_run_returns_when_the_job_ends_and_the_hold_lasts_min_hold(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    ran: list[str] = []
    started = time.monotonic()
    assert client.task_lock(name, min_hold=MIN_HOLD, max_hold=MAX_HOLD).run(ran.append, "a")
    returned = time.monotonic() - started
    assert ran == ["a"]
    assert returned < MIN_HOLD - 1, f"run returned {returned:.1f}s after it started"
    assert other.task_lock(name, min_hold=0.1, max_hold=MAX_HOLD).try_acquire() is None
    taken_after_min_hold(other, name, started)


async def test_asyncio_run_returns_when_the_job_ends(
    aclient: raftlock.asyncio.Client, other: raftlock.Client, name: str
) -> None:
    ran: list[str] = []

    async def job(who: str) -> None:
        ran.append(who)

    started = time.monotonic()
    task_lock = aclient.task_lock(name, min_hold=MIN_HOLD, max_hold=MAX_HOLD)
    assert await task_lock.run(job, "a")
    returned = time.monotonic() - started
    assert ran == ["a"]
    assert returned < MIN_HOLD - 1, f"run returned {returned:.1f}s after it started"
    await asyncio.to_thread(taken_after_min_hold, other, name, started)


def test_the_hold_outlives_an_interpreter_that_exits_after_the_job(
    cluster: Cluster, other: raftlock.Client, name: str
) -> None:
    script = """
        import sys, raftlock
        client = raftlock.Client(sys.argv[1])
        task_lock = client.task_lock(sys.argv[2], min_hold=float(sys.argv[3]), max_hold=120)
        assert task_lock.run(print, "ran")
    """  # and the interpreter exits at once
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(script),
            ",".join(cluster.endpoints),
            name,
            str(MIN_HOLD),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"
    exited = time.monotonic() - started
    assert exited < MIN_HOLD - 1, f"the worker exited {exited:.1f}s after it started"
    # Neither released early by the exit nor held until max_hold.
    taken_after_min_hold(other, name, started)
