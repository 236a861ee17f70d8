"""Stopping an application whose replicas embed a node each: SIGTERM to
all three replicas in the same moment (``kubectl scale --replicas=0``,
``docker compose down``) ends every process within a moment, although
the last ones to go have no quorum left to resign or revoke with, and
without a flood of warnings. Real processes: examples/python/
scheduler_app.py as documented, an asyncio app that also holds a lock
(``raftlock.asyncio.Node``, ``leader_election``), and a blocking one
(``raftlock.Node``, ``LeaderElection``, a held lock)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import raftlock
from conftest import free_port, raftlock_bin, wait_until

#: What the test asserts of each exit; the promise (docs/operations.md,
#: "Stopping") is 2 s; this leaves room for a starved test machine.
STOP_BOUND = 5.0

ASYNCIO_APP = """
import asyncio, contextlib, signal
import raftlock, raftlock.asyncio

async def main() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with raftlock.asyncio.Node() as node:
        await node.wait_ready(timeout=60)
        client = node.client(session_ttl=5)
        async with client.leader_election("stop/app", str(node.id)) as election:
            async with client.lock(f"stop/held-{node.id}"):
                await election.wait_for_leader(0.5)
                print("ready", flush=True)
                await stop.wait()
        with contextlib.suppress(raftlock.RaftlockError):
            await client.close()
    print("stopped", flush=True)

asyncio.run(main())
"""

SYNC_APP = """
import contextlib, signal, threading
import raftlock

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
with raftlock.Node() as node:
    node.wait_ready(timeout=60)
    client = node.client(session_ttl=5)
    with client.leader_election("stop/app", str(node.id)) as election:
        with client.lock(f"stop/held-{node.id}"):
            election.wait_for_leader(0.5)
            print("ready", flush=True)
            stop.wait()
    with contextlib.suppress(raftlock.RaftlockError):
        client.close()
print("stopped", flush=True)
"""


#: The example app of the README (examples/python), run as documented.
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "scheduler_app.py"


class Replicas:
    """Three processes of one app, each embedding a node."""

    def __init__(self, source: str | None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="raftlock-stop-"))
        self.app = self.dir / "app.py"
        if source is None:
            self.app = EXAMPLE
        else:
            self.app.write_text(source)
        token = self.dir / "join-token"
        subprocess.run(
            [raftlock_bin(), "certs", "create-join-token", "--out", str(token)],
            check=True,
            capture_output=True,
        )
        addrs = {i: (f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}") for i in (1, 2, 3)}
        initial = ",".join(f"{i}={peer}/{client}" for i, (peer, client) in addrs.items())
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        for i, (peer, client) in addrs.items():
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("RAFTLOCK_")},
                "RAFTLOCK_ID": str(i),
                "RAFTLOCK_DATA_DIR": str(self.dir / f"data-{i}"),
                "RAFTLOCK_CLIENT_ADDR": client,
                "RAFTLOCK_PEER_ADDR": peer,
                "RAFTLOCK_JOIN_TOKEN": token.read_text().strip(),
                "RAFTLOCK_INITIAL_CLUSTER": initial,
                "APP_REGISTER": str(self.dir / "register.jsonl"),
                "APP_HTTP_ADDR": f"127.0.0.1:{free_port()}",
                "APP_INTERVAL": "0.3",
            }
            log = open(self.log(i), "wb")  # noqa: SIM115 - the process owns it
            self.procs[i] = subprocess.Popen(
                [sys.executable, str(self.app)], env=env, stdout=log, stderr=log
            )

    def log(self, i: int) -> Path:
        return self.dir / f"replica-{i}.log"

    def text(self, i: int) -> str:
        return self.log(i).read_text(errors="replace")

    def kill(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(params=["example", "asyncio", "sync"])
def replicas(request: pytest.FixtureRequest) -> Iterator[Replicas]:
    source = {"example": None, "asyncio": ASYNCIO_APP, "sync": SYNC_APP}[request.param]
    r = Replicas(source)
    try:
        if source is None:
            register = r.dir / "register.jsonl"
            wait_until("a replica runs the job", register.exists, timeout=90)
        else:
            for i in r.procs:
                wait_until(f"replica {i} is ready", lambda i=i: "ready" in r.text(i), timeout=90)
        yield r
    finally:
        print({i: r.text(i)[-3000:] for i in r.procs})
        r.kill()


def test_every_replica_stops_fast_when_all_get_sigterm_at_once(replicas: Replicas) -> None:
    """Each replica leaves its election and its lock, closes its client
    and stops its node, in that order, as a real app does; the last ones
    have no quorum left. Without the stop-aware leave (a resign, release
    or revoke that retries for ``retry_for``, 15 s, against a cluster
    that is gone; the lease-expiry warning every 50 ms) the last replica
    took 18 s and logged about 300 warnings."""
    sent = time.monotonic()
    for proc in replicas.procs.values():
        proc.send_signal(signal.SIGTERM)
    took: dict[int, float] = {}
    while len(took) < len(replicas.procs) and time.monotonic() - sent < 60:
        for i, proc in replicas.procs.items():
            if i not in took and proc.poll() is not None:
                took[i] = round(time.monotonic() - sent, 2)
        time.sleep(0.01)
    warnings = {i: replicas.text(i).count("WARN") for i in replicas.procs}
    print(f"exit after SIGTERM to all three at once, s: {took}; warning lines: {warnings}")
    for i, proc in replicas.procs.items():
        assert proc.returncode == 0, replicas.text(i)[-3000:]
        assert replicas.text(i).rstrip().endswith("stopped")
        assert took[i] < STOP_BOUND, f"replica {i} took {took[i]} s: {took}"
        assert replicas.text(i).count("cannot propose lease expiry") <= 2
        assert warnings[i] <= 10, replicas.text(i)[-3000:]


def test_calls_of_a_stopping_node_end_at_once(tmp_path: Path) -> None:
    """A call blocked on a node of this process (a waiting acquire) ends
    with "node 1 of this process is stopping" as soon as ``stop()`` is
    called from another thread, and a call made after it too. Without the
    node link the waiting acquire, ended by the node's shutdown, is
    retried against the closed listener for ``retry_for`` (here 20 s)."""
    node = raftlock.Node(
        data_dir=tmp_path / "data",
        client_addr=f"127.0.0.1:{free_port()}",
        peer_addr=f"127.0.0.1:{free_port()}",
    )
    node.wait_ready(timeout=30)
    holder = node.client(session_ttl=5)
    waiter = node.client(session_ttl=5, retry_for=20)
    with holder.lock("stop/busy"):
        stopper = threading.Timer(1.0, node.stop)
        stopper.start()
        started = time.monotonic()
        with pytest.raises(raftlock.Unavailable, match="node 1 of this process is stopping"):
            waiter.lock("stop/busy").acquire()
        took = time.monotonic() - started
        stopper.join()
    with pytest.raises(raftlock.Unavailable, match="is stopping"):
        waiter.lock("stop/other").acquire()
    print(f"a waiting acquire ended {took:.2f} s after the wait began (stop() at 1 s)")
    assert took < STOP_BOUND
