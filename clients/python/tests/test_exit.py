"""An asyncio program may end while native calls are still in flight; the
interpreter then exits with none of the client's threads inside it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import Cluster

PROGRAM = """
import asyncio, sys, raftlock.asyncio

async def main():
    client = raftlock.asyncio.Client(sys.argv[1], session_ttl=5)
    await client.lock("exit/held").acquire()
    other = raftlock.asyncio.Client(sys.argv[1], session_ttl=5)
    # Waits that time out over the next 600 ms: while asyncio.run cancels
    # them, while the interpreter exits, and after.
    for i in range(1, 300):
        asyncio.ensure_future(other.lock("exit/held", timeout=0.002 * i).acquire())
    await asyncio.sleep(0.1)

asyncio.run(main())
"""


def test_calls_ending_during_interpreter_exit_do_not_crash_it(cluster: Cluster) -> None:
    """Each run exits 0. Without the exit hook (`raftlock._exit_hook`), a
    runtime thread finishing a call took the GIL of the finalizing
    interpreter, which ends such a thread with pthread_exit; the forced
    unwind through Rust frames crashed the process: 9 runs of 10 died of
    SIGSEGV (exit status -11) on the wheel without it."""
    endpoint = cluster.endpoints[0]
    for _ in range(10):
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(PROGRAM), endpoint],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
