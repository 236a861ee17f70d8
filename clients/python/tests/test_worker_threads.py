"""``TOKIO_WORKER_THREADS`` sets the worker threads of the client's runtime
and of a node's; empty counts as unset (the client's runtime then has one
fewer than the CPUs, 1 to 2), and a value that is not a count above 0 is a
``ValueError`` naming the variable, never a panic."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import Cluster, free_port

CLIENT = """
import sys, raftlock
with raftlock.Client(sys.argv[1]) as client:
    with client.lock("worker-threads/x") as lock:
        print("fence", lock.fence)
"""

WORKERS = """
import os, sys, raftlock
with raftlock.Client(sys.argv[1]) as client:
    client.session_lease()
    tasks = os.listdir("/proc/self/task")
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in tasks]
    print("workers", names.count("tokio-rt-worker"))
"""

NODE = """
import sys, tempfile, raftlock
with tempfile.TemporaryDirectory() as d:
    try:
        node = raftlock.Node(data_dir=d + "/data", client_addr=sys.argv[1], peer_addr=sys.argv[2])
    except ValueError as e:
        print("ValueError:", e)
    else:
        node.stop()
        print("started")
"""


def run(code: str, value: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TOKIO_WORKER_THREADS": value},
    )


@pytest.mark.parametrize("value", ["", "1", " 2 "])
def test_an_empty_or_valid_count_runs_the_client(cluster: Cluster, value: str) -> None:
    """The client takes a lock. Without the check in `runtime.rs`, each
    value but "1" made the first call raise `PanicException` from tokio's
    own parse ("TOKIO_WORKER_THREADS" must be usize)."""
    done = run(CLIENT, value, cluster.endpoints[0])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("fence "), done.stdout


@pytest.mark.parametrize("value", ["", "3"])
def test_the_client_runtime_leaves_the_interpreter_a_cpu(cluster: Cluster, value: str) -> None:
    """Unset, the client's runtime has one worker fewer than the CPUs this
    process may run on, 1 to 2; set, the count given. With one worker per
    CPU (as before `client_worker_threads`), the unset case fails on any
    machine but one with a single CPU."""
    done = run(WORKERS, value, cluster.endpoints[0])
    assert done.returncode == 0, done.stderr[-2000:]
    expected = int(value) if value else min(2, max(1, len(os.sched_getaffinity(0)) - 1))
    assert done.stdout.split() == ["workers", str(expected)], done.stdout


@pytest.mark.parametrize("value", ["0", "many", "-1"])
def test_a_bad_count_is_a_value_error_naming_the_variable(cluster: Cluster, value: str) -> None:
    """The client's first call raises `ValueError` naming the variable.
    Without the check, tokio panicked (`PanicException`, and "cannot be set
    to 0" for 0)."""
    done = run(CLIENT, value, cluster.endpoints[0])
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: TOKIO_WORKER_THREADS must be"), done.stderr[-2000:]
    assert "Panic" not in done.stderr


@pytest.mark.parametrize(("value", "outcome"), [("", "started"), ("0", "ValueError")])
def test_a_node_reads_the_count_as_the_client_does(value: str, outcome: str) -> None:
    """A node starts with the empty value and refuses 0 with `ValueError`.
    Without the check, starting it raised `PanicException` for both (the
    client runtime it starts on, built by tokio's own parse)."""
    addrs = (f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}")
    done = run(NODE, value, *addrs)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(outcome), done.stdout
    assert "Panic" not in done.stderr
