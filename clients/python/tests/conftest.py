"""A real raftlock cluster for the tests: `raftlock serve` processes on
loopback, started, killed, paused and stopped by `cluster-scripts/` (the
one launcher of processes outside Rust), run by RAFTLOCK_BIN, else by the
`raftlock` command the wheel installed beside this interpreter."""

from __future__ import annotations

import json
import os
import shutil
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

SCRIPTS = Path(__file__).resolve().parents[3] / "cluster-scripts"


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
    """N `raftlock serve` processes, on free ports, that a test may kill,
    pause and restart: `cluster-scripts/start.sh --free-ports` and its
    sibling scripts on the cluster's directory."""

    def __init__(self, n: int = 3, *, secure: bool = False) -> None:
        self.bin = raftlock_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="raftlock-py-"))
        self.cli_args: list[str] = []
        self.token = ""
        start = ["-n", str(n), "-d", str(self.dir), "--free-ports", "--no-build"]
        if secure:
            start += self.secure()
        # Ids of the nodes this cluster runs (not killed).
        self.procs: list[int] = []
        try:
            out = self.script("start.sh", *start, timeout=120)
            self.endpoints = out.strip().splitlines()[-1].removeprefix("ENDPOINTS=").split(",")
            self.procs = list(range(1, n + 1))
            # Operator calls (force-release, ...) send the cluster's admin
            # credential, read from a member's data dir as an operator on
            # its host does; a secure cluster's admin is its `root` client.
            self.admin_token = None if secure else raftlock.admin_token(self.data_dir(1))
            self.wait_for_leader()
        except BaseException:
            self.stop(keep_logs=True)  # no node outlives a cluster that failed to start
            raise

    def data_dir(self, i: int) -> Path:
        """Node `i`'s data dir (cluster-scripts' layout)."""
        return self.dir / f"node{i}" / "data"

    def join_token_hex(self) -> str:
        """The hex of the cluster's join token (start.sh's DIR/join-token)."""
        return (self.dir / "join-token").read_text().strip().removeprefix("rlj1-")

    def script(self, name: str, *args: str, timeout: float = 60) -> str:
        """Runs `cluster-scripts/NAME ARGS` with this cluster's binary;
        answers its stdout, fails the test with its stderr."""
        done = subprocess.run(
            [str(SCRIPTS / name), *args],
            env={**os.environ, "RAFTLOCK_BIN": self.bin},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{name} {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
            )
        return done.stdout

    def secure(self) -> list[str]:
        """TLS on both ports and client authentication (`start.sh --tls`):
        the client certificate `root` is an admin, and a token user `jobs`
        may use `jobs/*` only (`-a`, appended to the cluster's auth file).
        Answers start.sh's flags."""
        made = subprocess.run(
            [self.bin, "auth", "create-token", "--user", "jobs", "--role", "jobs"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        self.token = next(
            line.split()[1] for line in made.splitlines() if line.startswith("token:")
        )
        extra = self.dir / "auth-jobs.toml"
        extra.write_text('[roles.jobs]\nnames = ["jobs/*"]\n\n' + made[made.index("[[users]]") :])
        certs = self.dir / "certs"
        self.ca = certs / "ca.crt"
        self.admin_cert = certs / "client-root.crt"
        self.admin_key = certs / "client-root.key"
        self.cli_args = [
            "--cacert",
            str(self.ca),
            "--cert",
            str(self.admin_cert),
            "--key",
            str(self.admin_key),
        ]
        return ["--tls", "-a", str(extra)]

    def status(self) -> dict[str, object]:
        out = subprocess.run(
            [
                self.bin,
                "cluster",
                "status",
                "--output",
                "json",
                "--endpoints",
                ",".join(self.endpoints[i - 1] for i in self.procs),
                *self.cli_args,
            ],
            capture_output=True,
            timeout=30,
            check=True,
        )
        return dict(json.loads(out.stdout))

    def cli(self, *args: str) -> str:
        """Runs `raftlock ARGS` against this cluster as an operator types
        it (with the cluster's client flags); answers its stdout, fails the
        test with its stderr."""
        done = subprocess.run(
            [
                self.bin,
                *args,
                "--endpoints",
                ",".join(self.endpoints[i - 1] for i in self.procs),
                *self.cli_args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            pytest.fail(f"raftlock {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done.stdout

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
        """kill -9 node `i`."""
        self.script("kill.sh", "-d", str(self.dir), "-i", str(i))
        self.procs.remove(i)

    def pause(self, i: int) -> None:
        self.script("pause.sh", "-d", str(self.dir), "-i", str(i))

    def resume(self, i: int) -> None:
        self.script("resume.sh", "-d", str(self.dir), "-i", str(i))

    def stop(self, keep_logs: bool = False) -> None:
        """Stops every node at once (SIGKILL; paused ones are resumed
        first) and, unless `keep_logs`, removes the directory."""
        if (self.dir / "cluster.env").exists():
            self.script("stop.sh", "-d", str(self.dir), "-t", "0")
        self.procs = []
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
    """A second process's client, as far as the cluster can tell; an
    operator's (it sends the admin credential), for force-releases."""
    c = raftlock.Client(cluster.endpoints, session_ttl=3, token=cluster.admin_token)
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
