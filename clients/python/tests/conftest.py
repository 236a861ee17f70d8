"""A real raftlock cluster for the tests: `raftlock serve` processes on
loopback, run by RAFTLOCK_BIN, else by the `raftlock` command the wheel
installed beside this interpreter."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import raftlock
import raftlock.asyncio


def raftlock_bin() -> str:
    found = os.environ.get("RAFTLOCK_BIN") or str(Path(sysconfig.get_path("scripts")) / "raftlock")
    if not Path(found).is_file():
        pytest.fail(
            f"no raftlock command at {found}: install the wheel (pip install raftlock-*.whl), "
            "or set RAFTLOCK_BIN to a `raftlock` binary (cargo build --bin raftlock)"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """N `raftlock serve` processes that a test may kill, pause and restart."""

    def __init__(self, n: int = 3, *, secure: bool = False) -> None:
        self.bin = raftlock_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="raftlock-py-"))
        self.node_args: dict[int, list[str]] = {i: [] for i in range(1, n + 1)}
        self.cli_args: list[str] = []
        self.token = ""
        if secure:
            self.secure(n)
        else:
            # Peers authenticate with a join token when there is no CA.
            join_token = self.dir / "join-token"
            subprocess.run(
                [self.bin, "certs", "create-join-token", "--out", str(join_token)],
                check=True,
                capture_output=True,
            )
            for i in range(1, n + 1):
                self.node_args[i] = ["--join-token-file", str(join_token)]
        self.clients = {i: f"127.0.0.1:{free_port()}" for i in range(1, n + 1)}
        self.peers = {i: f"127.0.0.1:{free_port()}" for i in range(1, n + 1)}
        self.initial = ",".join(f"{i}={self.peers[i]}/{self.clients[i]}" for i in self.clients)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        try:
            for i in self.clients:
                self.start(i)
            self.wait_for_leader()
        except BaseException:
            self.stop(keep_logs=True)  # no node outlives a cluster that failed to start
            raise

    def secure(self, n: int) -> None:
        """TLS on both ports (certificates from `raftlock certs`), client
        authentication: the client certificate `admin` is an admin, a token
        user `jobs` may use `jobs/*` only."""
        certs = self.dir / "certs"

        def cli(*args: str) -> str:
            done = subprocess.run(
                [self.bin, *args], capture_output=True, text=True, check=True, timeout=60
            )
            return done.stdout

        cli("certs", "create-ca", "--certs-dir", str(certs))
        for i in range(1, n + 1):
            cli(
                "certs",
                "create-node",
                "--id",
                str(i),
                "--host",
                "127.0.0.1",
                "--certs-dir",
                str(certs),
            )
        cli("certs", "create-client", "--name", "admin", "--certs-dir", str(certs))
        made = cli("auth", "create-token", "--user", "jobs", "--role", "jobs")
        self.token = next(
            line.split()[1] for line in made.splitlines() if line.startswith("token:")
        )
        entry = made[made.index("[[users]]") :]
        auth = self.dir / "auth.toml"
        auth.write_text(
            '[[users]]\nname = "admin"\nroles = ["admin"]\n\n'
            '[roles.jobs]\nnames = ["jobs/*"]\n\n' + entry
        )
        self.ca = certs / "ca.crt"
        self.admin_cert = certs / "client-admin.crt"
        self.admin_key = certs / "client-admin.key"
        for i in range(1, n + 1):
            self.node_args[i] = [
                "--tls-cert",
                str(certs / f"node-{i}.crt"),
                "--tls-key",
                str(certs / f"node-{i}.key"),
                "--tls-ca",
                str(self.ca),
                "--auth-file",
                str(auth),
            ]
        self.cli_args = [
            "--cacert",
            str(self.ca),
            "--cert",
            str(self.admin_cert),
            "--key",
            str(self.admin_key),
        ]

    @property
    def endpoints(self) -> list[str]:
        return list(self.clients.values())

    def start(self, i: int) -> None:
        log = open(self.dir / f"node-{i}.log", "ab")  # noqa: SIM115 - the process owns it
        self.procs[i] = subprocess.Popen(
            [
                self.bin,
                "serve",
                "--id",
                str(i),
                "--data-dir",
                str(self.dir / f"node-{i}"),
                "--client-addr",
                self.clients[i],
                "--peer-addr",
                self.peers[i],
                "--initial-cluster",
                self.initial,
                "--admin-addr",
                "off",
                *self.node_args[i],
            ],
            stdout=log,
            stderr=log,
        )

    def status(self) -> dict[str, object]:
        out = subprocess.run(
            [
                self.bin,
                "cluster",
                "status",
                "--output",
                "json",
                "--endpoints",
                ",".join(self.clients[i] for i in self.procs),
                *self.cli_args,
            ],
            capture_output=True,
            timeout=30,
            check=True,
        )
        return dict(json.loads(out.stdout))

    def wait_for_leader(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while True:
            try:
                leader = self.status().get("leader")
                if isinstance(leader, int) and leader in self.procs:
                    return leader
            except (subprocess.SubprocessError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no leader within {timeout}s; logs in {self.dir}")
            time.sleep(0.2)

    def kill(self, i: int) -> None:
        proc = self.procs.pop(i)
        proc.kill()
        proc.wait()

    def pause(self, i: int) -> None:
        self.procs[i].send_signal(signal.SIGSTOP)

    def resume(self, i: int) -> None:
        self.procs[i].send_signal(signal.SIGCONT)

    def stop(self, keep_logs: bool = False) -> None:
        for i in list(self.procs):
            self.procs[i].send_signal(signal.SIGCONT)
            self.kill(i)
        if not keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """One 3-node cluster for the tests that do not harm it."""
    c = Cluster(3)
    yield c
    c.stop()


@pytest.fixture
def fresh_cluster() -> Iterator[Cluster]:
    """A 3-node cluster of the test's own, to kill nodes in."""
    c = Cluster(3)
    yield c
    c.stop()


@pytest.fixture
def client(cluster: Cluster) -> Iterator[raftlock.Client]:
    c = raftlock.Client(cluster.endpoints, session_ttl=3)
    yield c
    c.close()


@pytest.fixture
def other(cluster: Cluster) -> Iterator[raftlock.Client]:
    """A second process's client, as far as the cluster can tell."""
    c = raftlock.Client(cluster.endpoints, session_ttl=3)
    yield c
    c.close()


@pytest.fixture
async def aclient(cluster: Cluster) -> AsyncIterator[raftlock.asyncio.Client]:
    c = raftlock.asyncio.Client(cluster.endpoints, session_ttl=3)
    yield c
    await c.close()


def wait_until(what: str, check: object, timeout: float = 15.0) -> None:
    """Polls `check()` until true; fails naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout}s")
        time.sleep(0.05)
