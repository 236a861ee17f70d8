"""Measures a Python replica with an embedded node (raftlock.Node) beside
`raftlock serve`, the same Rust node on its own: three of each on
loopback; the time from process start to a known leader, RSS and CPU while
idle, and a lock's round trip (acquire + release) from a client of one
node.

    python bench/python_node.py --raftlock PATH/TO/raftlock [--idle 20] [--rounds 300]

Run with the interpreter that has the raftlock wheel installed; prints
one JSON object per system, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPLICA = """
import sys, time, json
started = time.monotonic()
import raftlock
node = raftlock.Node()
node.wait_ready(timeout=60)
print(json.dumps({"ready_s": time.monotonic() - started}), flush=True)
if sys.stdin.readline().strip() == "bench":
    client = node.client(session_ttl=10)
    lock = client.lock("bench/rt")
    times = []
    for _ in range(int(sys.argv[1])):
        t = time.perf_counter()
        lock.acquire()
        lock.release()
        times.append(time.perf_counter() - t)
    print(json.dumps(times), flush=True)
    client.close()
    sys.stdin.readline()
node.stop()
"""

BARE = "import sys, raftlock; print('x', flush=True); sys.stdin.readline()"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def idle_usage(pids: list[int], seconds: float) -> tuple[float, float]:
    """Mean RSS (MiB) and CPU (% of one core) of `pids` over `seconds`."""
    hz = os.sysconf("SC_CLK_TCK")
    before = [cpu_ticks(p) for p in pids]
    time.sleep(seconds)
    cpu = [(cpu_ticks(p) - b) / hz / seconds * 100 for p, b in zip(pids, before, strict=True)]
    rss = [rss_kib(p) / 1024 for p in pids]
    return statistics.mean(rss), statistics.mean(cpu)


def round_trips(times: list[float]) -> dict[str, float]:
    """The median and 99th percentile of lock round trips (`times`, seconds), in ms."""
    return {
        "lock_rt_ms_p50": statistics.median(times) * 1000,
        "lock_rt_ms_p99": sorted(times)[int(len(times) * 0.99) - 1] * 1000,
    }


def kill(procs: list[subprocess.Popen[str]] | list[subprocess.Popen[bytes]]) -> None:
    """Kills `procs` and waits for each."""
    for p in procs:
        p.kill()
        p.wait()


def cluster(tmp: Path, token: str) -> tuple[str, list[dict[str, str]]]:
    members = [(free_port(), free_port()) for _ in range(3)]
    initial = ",".join(f"{i + 1}=127.0.0.1:{p}/127.0.0.1:{c}" for i, (p, c) in enumerate(members))
    envs = [
        {
            "RAFTLOCK_ID": str(i + 1),
            "RAFTLOCK_DATA_DIR": str(tmp / f"n{i + 1}"),
            "RAFTLOCK_INITIAL_CLUSTER": initial,
            "RAFTLOCK_JOIN_TOKEN": token,
            "RAFTLOCK_ADMIN_ADDR": "off",
        }
        for i in range(3)
    ]
    return initial, envs


def python_replicas(tmp: Path, token: str, idle: float, rounds: int) -> dict[str, object]:
    _, envs = cluster(tmp / "py", token)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", REPLICA, str(rounds)],
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for env in envs
    ]
    bare = subprocess.Popen(
        [sys.executable, "-c", BARE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        ready = [json.loads(p.stdout.readline())["ready_s"] for p in procs]  # type: ignore[union-attr]
        bare.stdout.readline()  # type: ignore[union-attr]
        time.sleep(5)  # settle
        rss, cpu = idle_usage([p.pid for p in procs], idle)
        bare_rss = rss_kib(bare.pid) / 1024
        procs[0].stdin.write("bench\n")  # type: ignore[union-attr]
        procs[0].stdin.flush()  # type: ignore[union-attr]
        times = json.loads(procs[0].stdout.readline())  # type: ignore[union-attr]
        return {
            "system": "Python replica, raftlock.Node (wheel)",
            "ready_s": max(ready),
            "idle_rss_mib": rss,
            "python_only_rss_mib": bare_rss,
            "idle_cpu_pct": cpu,
            **round_trips(times),
        }
    finally:
        kill([*procs, bare])


def rust_nodes(tmp: Path, token: str, raftlock: str, idle: float, rounds: int) -> dict[str, object]:
    import raftlock as rl

    _, envs = cluster(tmp / "rs", token)
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [raftlock, "serve"],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for env in envs
    ]
    endpoint = envs[0]["RAFTLOCK_INITIAL_CLUSTER"].split(",")[0].split("/")[1]
    try:
        while True:
            done = subprocess.run(
                [raftlock, "cluster", "status", "--output", "json", "--endpoints", endpoint],
                capture_output=True,
                text=True,
            )
            if done.returncode == 0 and json.loads(done.stdout).get("leader"):
                break
            time.sleep(0.02)
        ready = time.monotonic() - started
        time.sleep(5)
        rss, cpu = idle_usage([p.pid for p in procs], idle)
        client = rl.Client(endpoint, session_ttl=10)
        lock = client.lock("bench/rt")
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            lock.acquire()
            lock.release()
            times.append(time.perf_counter() - t)
        client.close()
        return {
            "system": "raftlock serve: the same node, no Python API around it",
            "ready_s": ready,
            "idle_rss_mib": rss,
            "idle_cpu_pct": cpu,
            **round_trips(times),
        }
    finally:
        kill(procs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--raftlock", required=True, help="a raftlock binary (release)")
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        token_file = tmp / "token"
        subprocess.run(
            [args.raftlock, "certs", "create-join-token", "--out", str(token_file)], check=True
        )
        token = token_file.read_text().strip()
        rows = [
            python_replicas(tmp, token, args.idle, args.rounds),
            rust_nodes(tmp, token, args.raftlock, args.idle, args.rounds),
        ]
    for row in rows:
        print(json.dumps(row))
    print(
        "| | ready (s) | idle RSS (MiB) | idle CPU (% of a core) | lock round trip p50 / p99 (ms) |"
    )
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['system']} | {r['ready_s']:.2f} | {r['idle_rss_mib']:.1f} | "
            f"{r['idle_cpu_pct']:.1f} | {r['lock_rt_ms_p50']:.2f} / {r['lock_rt_ms_p99']:.2f} |"
        )
    bare = rows[0]["python_only_rss_mib"]
    print(f"(an interpreter that imported raftlock, no node: {bare:.1f} MiB)")


if __name__ == "__main__":
    main()
