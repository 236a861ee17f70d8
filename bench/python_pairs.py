"""W1 and W2 from Python beside the Rust client: lock+unlock pairs on one
3-node raftlock cluster, in one run, the clients alternating round by round.

    python bench/python_pairs.py --raftlock target/release/raftlock \\
        --bench target/release/raftlock-bench --rounds 3 --duration 8

Workloads (``--workloads``, both by default):

- ``W1``: one client on one lock, pairs back to back (one task, one thread);
- ``W2``: TASKS clients on TASKS locks (``--tasks``, 32).

Clients (``--only``; each round runs every client of every workload once,
the order reversed on odd rounds, each run in a fresh process):

- ``rust``: the Rust bench's own clients (``raftlock-bench pairs``);
- ``asyncio``: ``raftlock.asyncio``, one task per lock, each task
  ``async with client.lock(name)`` on a client of its own;
- ``threads``: the blocking client, one thread per lock, ``with client.lock(name)``;
- ``redis``: redis-py's asyncio ``Lock`` on a Redis with ``appendfsync
  always`` (the reference column; skipped, saying so, without
  ``redis-server`` or redis-py).

Each run reports pairs/s, acquire p50/p99 and its process's CPU per pair
over the measured window; a table per workload gives the medians and the
ratio to ``rust``. The cluster is started with ``cluster-scripts/start.sh``
(free ports) and stopped at the end, unless ``--endpoints`` names a running
one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLIENTS = ("rust", "asyncio", "threads", "redis")
WORKLOADS = ("W1", "W2")


class Window:
    """The measured window of one run: pairs that start after the warm-up
    and end inside it count; CPU is the process's over the window."""

    def __init__(self, warmup: float, duration: float) -> None:
        self.start = time.monotonic()
        self.measure_from = self.start + warmup
        self.end = self.measure_from + duration
        self.duration = duration
        self.samples: list[float] = []
        self.errors = 0
        self.lock = threading.Lock()

    def record(self, began: float, acquired: float, done: float) -> None:
        if began >= self.measure_from and done <= self.end:
            with self.lock:
                self.samples.append(acquired - began)

    def report(self, cpu: float | None) -> dict[str, Any]:
        pairs = len(self.samples)
        ordered = sorted(self.samples)

        def quantile(q: float) -> float:
            if not ordered:
                return 0.0
            rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 1))))
            return ordered[rank - 1] * 1000

        return {
            "pairs_per_s": pairs / self.duration,
            "acquire_p50_ms": quantile(0.5),
            "acquire_p99_ms": quantile(0.99),
            "acquire_max_ms": quantile(1.0),
            "errors": self.errors,
            "cpu_ms_per_pair": cpu * 1000 / pairs if cpu is not None and pairs else None,
        }


async def window_cpu(window: Window) -> float:
    """This process's CPU seconds (every thread) inside the window."""
    await asyncio.sleep(max(0.0, window.measure_from - time.monotonic()))
    began = time.process_time()
    await asyncio.sleep(max(0.0, window.end - time.monotonic()))
    return time.process_time() - began


async def run_async_tasks(
    tasks: int, window: Window, lock: Callable[[int], AbstractAsyncContextManager[object]]
) -> float:
    """``tasks`` tasks, task ``i`` taking and releasing ``lock(i)`` until
    the window ends; answers the window's CPU."""

    async def worker(i: int) -> None:
        while time.monotonic() < window.end:
            began = time.monotonic()
            try:
                async with lock(i):
                    acquired = time.monotonic()
            except Exception:
                window.errors += 1
                await asyncio.sleep(0.01)
                continue
            window.record(began, acquired, time.monotonic())

    cpu = asyncio.ensure_future(window_cpu(window))
    await asyncio.gather(*(worker(i) for i in range(tasks)))
    return await cpu


def worker_asyncio(args: argparse.Namespace) -> dict[str, Any]:
    import raftlock.asyncio

    async def main() -> dict[str, Any]:
        clients = [raftlock.asyncio.Client(args.endpoints) for _ in range(args.tasks)]
        for c in clients:
            await c.session_lease()  # connected and granted before the window
        window = Window(args.warmup, args.duration)

        cpu = await run_async_tasks(
            args.tasks, window, lambda i: clients[i].lock(f"{args.tag}/{i}")
        )
        for c in clients:
            await c.close()
        return window.report(cpu)

    return asyncio.run(main())


def worker_threads(args: argparse.Namespace) -> dict[str, Any]:
    import raftlock

    clients = [raftlock.Client(args.endpoints) for _ in range(args.tasks)]
    for c in clients:
        c.session_lease()
    window = Window(args.warmup, args.duration)

    def worker(i: int) -> None:
        client, name = clients[i], f"{args.tag}/{i}"
        while time.monotonic() < window.end:
            began = time.monotonic()
            try:
                with client.lock(name):
                    acquired = time.monotonic()
            except Exception:
                with window.lock:
                    window.errors += 1
                time.sleep(0.01)
                continue
            window.record(began, acquired, time.monotonic())

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.tasks)]
    for t in threads:
        t.start()
    time.sleep(max(0.0, window.measure_from - time.monotonic()))
    began = time.process_time()
    time.sleep(max(0.0, window.end - time.monotonic()))
    cpu = time.process_time() - began
    for t in threads:
        t.join()
    for c in clients:
        c.close()
    return window.report(cpu)


def worker_redis(args: argparse.Namespace) -> dict[str, Any]:
    import redis.asyncio

    async def main() -> dict[str, Any]:
        host, port = args.endpoints[0].rsplit(":", 1)
        clients = [redis.asyncio.Redis(host=host, port=int(port)) for _ in range(args.tasks)]
        for c in clients:
            await c.ping()
        window = Window(args.warmup, args.duration)

        cpu = await run_async_tasks(
            args.tasks, window, lambda i: clients[i].lock(f"{args.tag}/{i}", timeout=60)
        )
        for c in clients:
            await c.aclose()
        return window.report(cpu)

    return asyncio.run(main())


WORKERS = {"asyncio": worker_asyncio, "threads": worker_threads, "redis": worker_redis}


class RaftlockCluster:
    """Three ``raftlock serve`` nodes on free ports (cluster-scripts)."""

    def __init__(self, binary: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="raftlock-pybench-"))
        self.env = {**os.environ, "RAFTLOCK_BIN": binary}
        out = self.script("start.sh", "-n", "3", "-d", str(self.dir), "--free-ports", "--no-build")
        self.endpoints = out.strip().splitlines()[-1].removeprefix("ENDPOINTS=").split(",")

    def script(self, name: str, *args: str) -> str:
        done = subprocess.run(
            [str(REPO / "cluster-scripts" / name), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed ({done.returncode}):\n{done.stderr}")
        return done.stdout

    def stop(self) -> None:
        self.script("stop.sh", "-d", str(self.dir), "-t", "0")
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis:
    """A redis-server that syncs every write (``appendfsync always``)."""

    def __init__(self, binary: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="raftlock-pybench-redis-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.endpoint = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_worker(
    client: str, workload: str, endpoints: list[str], tag: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One run of ``client`` on ``workload`` in a process of its own; its
    JSON report."""
    tasks = tasks_of(workload, args)
    common = ["--warmup", str(args.warmup), "--duration", str(args.duration)]
    if client == "rust":
        cmd = [
            args.bench,
            "pairs",
            "--endpoints",
            ",".join(endpoints),
            "--workload",
            workload,
            "--clients",
            str(tasks),
            "--tag",
            tag,
            *common,
        ]
    else:
        python = sys.executable
        if client.endswith("-before"):
            python, client = args.before_python, client.removesuffix("-before")
        cmd = [
            python,
            __file__,
            "--worker",
            client,
            "--endpoints",
            ",".join(endpoints),
            "--tasks",
            str(tasks),
            "--tag",
            tag,
            *common,
        ]
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=args.warmup + args.duration + 120
    )
    if done.returncode != 0:
        raise RuntimeError(f"{workload} {client} run failed ({done.returncode}):\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def tasks_of(workload: str, args: argparse.Namespace) -> int:
    """Clients (tasks, threads) of ``workload``: W1 one, W2 ``--tasks``."""
    return 1 if workload == "W1" else int(args.tasks)


KEYS = ("pairs_per_s", "acquire_p50_ms", "acquire_p99_ms", "cpu_ms_per_pair")


def medians(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per client: the median of each figure over its rounds, its errors,
    its pairs/s over the Rust client's (``None`` without ``rust``), and
    that ratio in each round (the Rust client's run of the same round)."""
    out: dict[str, dict[str, Any]] = {}
    for client, rows in runs.items():
        row: dict[str, Any] = {}
        for key in KEYS:
            values = [r[key] for r in rows if r.get(key) is not None]
            row[key] = statistics.median(values) if values else None
        row["errors"] = sum(int(r["errors"]) for r in rows)
        out[client] = row
    rust = out.get("rust", {}).get("pairs_per_s")
    rust_by_round = {r["round"]: r["pairs_per_s"] for r in runs.get("rust", [])}
    for client, row in out.items():
        row["ratio_to_rust"] = row["pairs_per_s"] / rust if rust and row["pairs_per_s"] else None
        row["ratio_to_rust_by_round"] = [
            r["pairs_per_s"] / rust_by_round[r["round"]]
            for r in runs[client]
            if rust_by_round.get(r.get("round"))
        ]
    return out


def table(workload: str, tasks: int, runs: dict[str, list[dict[str, Any]]]) -> str:
    """The medians of one workload as a markdown table; "/ rust" is the
    ratio of the medians, "by round" the lowest and highest ratio of a
    client's run to the Rust client's run of the same round."""
    shape = "1 client, 1 lock" if workload == "W1" else f"{tasks} clients, {tasks} locks"
    lines = [
        (
            f"| {workload} ({shape}) | pairs/s | / rust | by round | acquire p50 (ms) "
            "| p99 (ms) | client CPU per pair (ms) | errors |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for client, row in medians(runs).items():
        ratio = row["ratio_to_rust"]
        by_round = row["ratio_to_rust_by_round"]
        spread = f"{min(by_round):.2f}-{max(by_round):.2f}" if by_round else "-"
        cpu = row["cpu_ms_per_pair"]
        lines.append(
            f"| {client} | {row['pairs_per_s'] or 0:,.0f} "
            f"| {'-' if ratio is None else f'{ratio:.2f}x'} | {spread} "
            f"| {row['acquire_p50_ms'] or 0:.2f} "
            f"| {row['acquire_p99_ms'] or 0:.2f} "
            f"| {'-' if cpu is None else f'{cpu:.3f}'} "
            f"| {row['errors']} |"
        )
    return "\n".join(lines)


def subset(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated subset of ``choices``."""

    def parse(text: str) -> list[str]:
        names = text.split(",")
        unknown = sorted(set(names) - set(choices))
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {unknown} (choose from {', '.join(choices)})"
            )
        return names

    return parse


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--raftlock",
        default=os.environ.get("RAFTLOCK_BIN") or str(REPO / "target/release/raftlock"),
        help="the raftlock that serves the cluster (default: RAFTLOCK_BIN, else target/release)",
    )
    p.add_argument(
        "--bench",
        default=os.environ.get("RAFTLOCK_BENCH_BIN") or str(REPO / "target/release/raftlock-bench"),
        help="raftlock-bench, the rust column (default: RAFTLOCK_BENCH_BIN, else target/release)",
    )
    p.add_argument(
        "--redis-server",
        default=shutil.which("redis-server"),
        help="redis-server (default: on PATH)",
    )
    p.add_argument(
        "--endpoints",
        type=lambda s: s.split(","),
        help="a running cluster instead of starting one",
    )
    p.add_argument(
        "--workloads",
        type=subset(WORKLOADS),
        default=list(WORKLOADS),
        help="comma-separated subset of " + ",".join(WORKLOADS),
    )
    p.add_argument(
        "--only",
        type=subset(CLIENTS),
        default=list(CLIENTS),
        help="clients, a comma-separated subset of " + ",".join(CLIENTS),
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--duration", type=float, default=8.0)
    p.add_argument("--tasks", type=int, default=32, help="W2's tasks (threads) and locks")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="1 round of 1 s, W2 with 4 tasks: proves the driver runs",
    )
    p.add_argument("--json", type=Path, help="write every round and the medians here")
    p.add_argument(
        "--before-python",
        help="also run asyncio and threads with this interpreter (another raftlock "
        "installed), as asyncio-before and threads-before: before/after in one run",
    )
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--tag", default="py", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.rounds, args.warmup, args.duration, args.tasks = 1, 0.2, 1.0, 4
    return args


def clients_to_run(args: argparse.Namespace) -> list[str]:
    """The clients asked for that can run here; says why for each skipped."""
    clients = []
    for c in CLIENTS:
        if c in args.only:
            if args.before_python and c in ("asyncio", "threads"):
                clients.append(f"{c}-before")
            clients.append(c)
    if "rust" in clients and not Path(args.bench).is_file():
        print(
            f"rust: skipped, no raftlock-bench at {args.bench} "
            "(cargo build --release -p raftlock-bench)"
        )
        clients.remove("rust")
    if "redis" in clients:
        try:
            import redis  # noqa: F401
        except ImportError:
            print("redis: skipped, redis-py is not installed (pip install redis)")
            clients.remove("redis")
    if "redis" in clients and not args.redis_server:
        print("redis: skipped, no redis-server on PATH (apt-get install redis-server)")
        clients.remove("redis")
    return clients


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args)))
        return 0
    clients = clients_to_run(args)
    workloads = [w for w in WORKLOADS if w in args.workloads]
    plan = [(w, c) for w in workloads for c in clients]
    load_before = os.getloadavg()
    cluster = None if args.endpoints else RaftlockCluster(args.raftlock)
    redis_server = Redis(args.redis_server) if "redis" in clients else None
    endpoints = args.endpoints or cluster.endpoints  # type: ignore[union-attr]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        w: {c: [] for c in clients} for w in workloads
    }
    try:
        for round_no in range(args.rounds):
            for workload, client in plan if round_no % 2 == 0 else plan[::-1]:
                target = (
                    [redis_server.endpoint] if client == "redis" and redis_server else endpoints
                )
                tag = f"{args.tag}/r{round_no}/{workload}/{client}"
                report = run_worker(client, workload, target, tag, args)
                report["round"] = round_no + 1
                runs[workload][client].append(report)
                print(
                    f"  round {round_no + 1} {workload} {client:<14} "
                    f"{report['pairs_per_s']:8.0f} pairs/s "
                    f"p50 {report['acquire_p50_ms']:.2f} ms "
                    f"p99 {report['acquire_p99_ms']:.2f} ms  "
                    f"cpu/pair {report['cpu_ms_per_pair'] or 0:.3f} ms  errors {report['errors']}",
                    flush=True,
                )
    finally:
        if redis_server:
            redis_server.stop()
        if cluster:
            cluster.stop()
    load_after = os.getloadavg()
    for workload in workloads:
        print()
        print(table(workload, tasks_of(workload, args), runs[workload]))
    print(
        f"\n{args.rounds} rounds of {args.duration:g} s (+{args.warmup:g} s warm-up), "
        f"W2 with {args.tasks} tasks; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after; {os.cpu_count()} CPUs"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "command": " ".join([sys.executable, *sys.argv]),
                    "rounds": runs,
                    "medians": {w: medians(runs[w]) for w in workloads},
                    "load_before": load_before,
                    "load_after": load_after,
                    "tasks": {w: tasks_of(w, args) for w in workloads},
                    "duration": args.duration,
                    "warmup": args.warmup,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
