"""The benchmark's Python driver (bench/python_pairs.py) runs: its smoke
mode (1 round of 1 s, 4 tasks) against the session's cluster, with the
Rust column where RAFTLOCK_BENCH_BIN names a raftlock-bench, and Redis's
where redis-server and redis-py are here. Fails if a workload errs, locks
nothing, or reports no CPU per pair."""

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
    runs = json.loads(out.read_text())["rounds"]
    assert {"asyncio", "threads"} <= set(runs), done.stdout
    if "rust" not in runs:
        assert "rust: skipped" in done.stdout
    if "redis" not in runs:
        assert "redis: skipped" in done.stdout
    for workload, rounds in runs.items():
        for report in rounds:
            assert report["errors"] == 0, (workload, report)
            assert report["pairs_per_s"] > 0, (workload, report)
            assert report["acquire_p50_ms"] > 0, (workload, report)
            assert report["cpu_ms_per_pair"] > 0, (workload, report)
    assert "| asyncio |" in done.stdout
    assert "| threads |" in done.stdout
