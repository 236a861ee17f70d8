"""The benchmark's Python driver (bench/python_pairs.py) runs: its smoke
mode (1 round of 1 s of W1 and of W2 with 4 tasks) against the session's
cluster, with the Rust column where RAFTLOCK_BENCH_BIN names a
raftlock-bench, and Redis's where redis-server and redis-py are here.
Fails if a workload is missing, a run errs, locks nothing, or reports no
CPU per pair, or if a table or a ratio to the Rust client is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import Cluster

DRIVER = Path(__file__).resolve().parents[3] / "bench" / "python_pairs.py"


def test_driver_smoke_runs_every_python_workload(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "pairs.json"
    env = dict(os.environ)
    env.setdefault("RAFTLOCK_BENCH_BIN", str(tmp_path / "no-raftlock-bench"))
    done = subprocess.run(
        [
            sys.executable,
            str(DRIVER),
            "--smoke",
            "--endpoints",
            ",".join(cluster.endpoints),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    runs = result["rounds"]
    assert set(runs) == {"W1", "W2"}, done.stdout
    assert result["tasks"] == {"W1": 1, "W2": 4}
    for workload, clients in runs.items():
        assert {"asyncio", "threads"} <= set(clients), (workload, done.stdout)
        if "rust" not in clients:
            assert "rust: skipped" in done.stdout
        if "redis" not in clients:
            assert "redis: skipped" in done.stdout
        for client, rounds in clients.items():
            assert len(rounds) == 1, (workload, client, rounds)
            for report in rounds:
                assert report["errors"] == 0, (workload, client, report)
                assert report["pairs_per_s"] > 0, (workload, client, report)
                assert report["acquire_p50_ms"] > 0, (workload, client, report)
                assert report["cpu_ms_per_pair"] > 0, (workload, client, report)
        medians = result["medians"][workload]
        assert set(medians) == set(clients)
        for client, row in medians.items():
            if "rust" in clients:
                assert row["ratio_to_rust"] > 0, (workload, client, row)
            else:
                assert row["ratio_to_rust"] is None, (workload, client, row)
    for header in ("| W1 (1 client, 1 lock) |", "| W2 (4 clients, 4 locks) |"):
        assert header in done.stdout, done.stdout
    assert done.stdout.count("| asyncio |") == 2, done.stdout
    assert done.stdout.count("| threads |") == 2, done.stdout
