"""examples/python: replicas of a service that embed a node each and elect
the one that runs a scheduled job, as real processes. The leading replica
is killed with SIGKILL again and again and restarted on its data dir; a
fenced register shows leadership never overlapped. A fourth replica joins
with RAFTLOCK_JOIN and is removed. The StatefulSet manifest is checked
against the Kubernetes schema."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import free_port, raftlock_bin, wait_until

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python"
sys.path.insert(0, str(EXAMPLE))
from fenced_register import FencedRegister  # noqa: E402

#: The job's leadership TTL: how long a killed leader keeps the job.
TTL = 3.0
#: How long after the kill another replica must lead: the TTL, a Raft
#: election if the killed replica also led Raft, and room for a machine
#: whose two cores are shared with builds.
TAKEOVER = TTL + 20.0


class Replicas:
    """Replica processes of the example app on loopback."""

    def __init__(self, n: int = 3) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="raftlock-app-"))
        token = self.dir / "join-token"
        subprocess.run(
            [raftlock_bin(), "certs", "create-join-token", "--out", str(token)],
            check=True,
            capture_output=True,
        )
        self.token = token.read_text().strip()
        self.register = FencedRegister(self.dir / "register.jsonl")
        self.addrs: dict[int, tuple[str, str, str]] = {}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        for i in range(1, n + 1):
            self.add_addrs(i)
        self.initial = ",".join(f"{i}={p}/{c}" for i, (p, c, _) in self.addrs.items())

    def add_addrs(self, i: int) -> None:
        self.addrs[i] = (
            f"127.0.0.1:{free_port()}",
            f"127.0.0.1:{free_port()}",
            f"127.0.0.1:{free_port()}",
        )

    def start(self, i: int, *, join: bool = False) -> None:
        peer, client, http = self.addrs[i]
        env = {
            **os.environ,
            "RAFTLOCK_ID": str(i),
            "RAFTLOCK_DATA_DIR": str(self.dir / f"data-{i}"),
            "RAFTLOCK_CLIENT_ADDR": client,
            "RAFTLOCK_PEER_ADDR": peer,
            "RAFTLOCK_JOIN_TOKEN": self.token,
            "APP_REGISTER": str(self.register.path),
            "APP_INTERVAL": "0.3",
            "APP_LEADER_TTL": str(TTL),
            "APP_HTTP_ADDR": http,
        }
        if join:
            env["RAFTLOCK_JOIN"] = "true"
        else:
            env["RAFTLOCK_INITIAL_CLUSTER"] = self.initial
        log = open(self.dir / f"replica-{i}.log", "ab")  # noqa: SIM115 - the process owns it
        self.procs[i] = subprocess.Popen(
            [sys.executable, str(EXAMPLE / "scheduler_app.py")],
            env=env,
            stdout=log,
            stderr=log,
        )

    def status(self, i: int) -> dict[str, object] | None:
        try:
            with urllib.request.urlopen(f"http://{self.addrs[i][2]}/status", timeout=5) as r:
                return dict(json.loads(r.read()))
        except OSError:
            return None

    def job_leader(self) -> int | None:
        """The replica that ran the job last, from the register."""
        records = self.register.records()
        return int(str(records[-1]["replica"]).split("-")[1]) if records else None

    def kill(self, i: int) -> None:
        proc = self.procs.pop(i)
        proc.kill()
        proc.wait()

    def terminate(self, i: int) -> int:
        proc = self.procs.pop(i)
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=60)

    def cli(self, *args: str) -> str:
        endpoints = ",".join(self.addrs[i][1] for i in self.procs if i <= 3)
        done = subprocess.run(
            [raftlock_bin(), *args, "--endpoints", endpoints],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def voters(self) -> list[int]:
        status = json.loads(self.cli("cluster", "status", "--output", "json"))
        return sorted(n["id"] for n in status["nodes"] if n["voter"])

    def stop(self) -> None:
        for i in list(self.procs):
            self.kill(i)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def replicas() -> Iterator[Replicas]:
    r = Replicas(3)
    try:
        for i in r.addrs:
            r.start(i)
        wait_until("a replica runs the job", lambda: r.job_leader() is not None, timeout=60)
        yield r
    finally:
        logs = {p.name: p.read_text(errors="replace")[-2000:] for p in r.dir.glob("*.log")}
        r.stop()
        print(json.dumps(logs, indent=1))


def assert_leadership_never_overlapped(register: FencedRegister) -> None:
    """Each fence belongs to one replica, fences only grow in the order the
    register accepted them, and no replica wrote with a stale fence (which
    only a replica that still thought it led after another took over would
    do)."""
    records = register.records()
    fences = [int(r["fence"]) for r in records]
    assert fences == sorted(fences)
    owners: dict[int, str] = {}
    for r in records:
        assert owners.setdefault(int(r["fence"]), str(r["replica"])) == r["replica"]
    assert register.refusals() == []


def test_killing_the_leader_hands_the_job_over_and_it_rejoins(replicas: Replicas) -> None:
    takeovers = []
    for _round in range(3):
        leader = replicas.job_leader()
        assert leader is not None
        before = len(replicas.register.records())
        fence = int(replicas.register.records()[-1]["fence"])
        replicas.kill(leader)
        killed = time.monotonic()

        def new_leader(leader: int = leader, fence: int = fence, before: int = before) -> bool:
            records = replicas.register.records()[before:]
            return any(
                int(r["fence"]) > fence and r["replica"] != f"replica-{leader}" for r in records
            )

        wait_until("another replica runs the job", new_leader, timeout=TAKEOVER)
        takeovers.append(round(time.monotonic() - killed, 1))
        # The killed replica comes back on its data dir and rejoins: it
        # knows the leader and has applied what the others did.
        replicas.start(leader)

        def rejoined(leader: int = leader) -> bool:
            status = replicas.status(leader)
            return bool(status and status["node_leader"] and status["members"] == [1, 2, 3])

        wait_until(f"replica {leader} rejoins", rejoined, timeout=60)
    print(f"takeover after kill -9, seconds (TTL {TTL}): {takeovers}")
    # Stopped with SIGTERM, every replica resigns and stops its node.
    for i in list(replicas.procs):
        assert replicas.terminate(i) == 0
    assert_leadership_never_overlapped(replicas.register)
    for i in replicas.addrs:
        log = (replicas.dir / f"replica-{i}.log").read_text()
        assert f"replica-{i}: stopped" in log


def test_a_fourth_replica_joins_and_is_removed(replicas: Replicas) -> None:
    replicas.add_addrs(4)
    replicas.start(4, join=True)
    peer, client, _http = replicas.addrs[4]
    # Membership calls send the cluster's admin credential, derived from
    # the join token (docs/security.md, "Operator calls").
    admin = ("--join-token-file", str(replicas.dir / "join-token"))

    def node_started() -> bool:
        status = replicas.status(4)
        return bool(status and status["node_role"] != "stopped")

    wait_until("replica 4 starts its node", node_started, timeout=60)
    replicas.cli("cluster", "add-learner", "4", peer, client, *admin)

    def caught_up() -> bool:
        status = replicas.status(4)
        return bool(status and status["node_leader"])

    wait_until("replica 4 knows the leader", caught_up, timeout=60)
    replicas.cli("cluster", "promote", "4", *admin)
    wait_until("4 voters", lambda: replicas.voters() == [1, 2, 3, 4], timeout=60)
    replicas.cli("cluster", "remove", "4", *admin)
    wait_until("3 voters", lambda: replicas.voters() == [1, 2, 3], timeout=60)
    # The job goes on among the three.
    count = len(replicas.register.records())
    wait_until("the job runs", lambda: len(replicas.register.records()) > count + 2)
    assert replicas.terminate(4) == 0
    assert_leadership_never_overlapped(replicas.register)


def test_the_statefulset_manifest_is_valid_kubernetes() -> None:
    """Every document of k8s/ against the Kubernetes schema (strict:
    an unknown or misspelt field fails), and the settings the app needs."""
    import kubernetes_validate  # type: ignore[import-untyped]
    import yaml  # type: ignore[import-untyped]

    docs = list(yaml.safe_load_all((EXAMPLE / "k8s" / "statefulset.yaml").read_text()))
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == ["Secret", "Service", "StatefulSet"]
    for doc in docs:
        kubernetes_validate.validate(doc, "1.32", strict=True)
    (sts,) = (d for d in docs if d["kind"] == "StatefulSet")
    env = {e["name"] for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert {"RAFTLOCK_ID", "RAFTLOCK_DATA_DIR", "RAFTLOCK_INITIAL_CLUSTER"} <= env
    assert {"RAFTLOCK_JOIN_TOKEN", "RAFTLOCK_ADVERTISE_CLIENT_ADDR"} <= env
    assert sts["spec"]["ordinals"]["start"] == 1  # node ids start at 1
    # The check can fail: a misspelt field is refused.
    sts["spec"]["template"]["spec"]["containers"][0]["enviroment"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sts, "1.32", strict=True)
