"""A service whose replicas embed a raftlock node each and elect the one
that runs a scheduled job: no Redis, no etcd, no lock server to run.

Every replica runs the same program, configured from the environment
alone, as a Kubernetes StatefulSet configures its pods (k8s/):

- ``RAFTLOCK_*``: the node, exactly as ``raftlock serve`` reads them
  (``RAFTLOCK_ID``, ``RAFTLOCK_DATA_DIR``, ``RAFTLOCK_INITIAL_CLUSTER``,
  ``RAFTLOCK_JOIN_TOKEN``, ...);
- ``APP_REGISTER``: the file the job writes to, with its fence (a stand-in
  for a database that checks fencing tokens);
- ``APP_INTERVAL``: seconds between runs of the job (default 1);
- ``APP_LEADER_TTL``: seconds a replica that dies keeps the job (default 5);
- ``APP_HTTP_ADDR``: ``host:port`` of ``/healthz``, ``/readyz`` and
  ``/status`` (default ``0.0.0.0:8080``).

SIGTERM (what Kubernetes sends) and SIGINT resign the job and stop the
node in order. Run three on one machine::

    raftlock certs create-join-token --out join-token
    export RAFTLOCK_JOIN_TOKEN=$(cat join-token) APP_REGISTER=/tmp/register.jsonl
    export RAFTLOCK_INITIAL_CLUSTER=1=127.0.0.1:27511/127.0.0.1:27501,\\
    2=127.0.0.1:27512/127.0.0.1:27502,3=127.0.0.1:27513/127.0.0.1:27503
    RAFTLOCK_ID=1 RAFTLOCK_DATA_DIR=data-1 APP_HTTP_ADDR=127.0.0.1:28001 python scheduler_app.py
    # and ids 2 and 3, with their own data dirs and HTTP ports, in two more terminals
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from typing import Any

import raftlock
import raftlock.asyncio
from fenced_register import FencedRegister, StaleFenceError

#: The election the replicas campaign in.
ELECTION = "example/scheduler"


def log(replica: str, message: str) -> None:
    print(f"{replica}: {message}", flush=True)


class App:
    """One replica: its node, its election, the job and the HTTP probes."""

    def __init__(self) -> None:
        self.node = raftlock.asyncio.Node()  # every option from RAFTLOCK_*
        self.replica = f"replica-{self.node.id}"
        self.register = FencedRegister(os.environ.get("APP_REGISTER", "register.jsonl"))
        self.interval = float(os.environ.get("APP_INTERVAL", "1"))
        self.ttl = float(os.environ.get("APP_LEADER_TTL", "5"))
        self.election: raftlock.asyncio.LeaderElection | None = None

    async def run(self, stop: asyncio.Event) -> None:
        http = await self.serve_http(os.environ.get("APP_HTTP_ADDR", "0.0.0.0:8080"))
        async with self.node:
            log(self.replica, f"node started, clients on {self.node.client_addr}")
            await self.node.wait_ready()
            client = self.node.client(session_ttl=self.ttl)
            async with client.leader_election(ELECTION, self.replica) as election:
                self.election = election
                ticker = asyncio.create_task(self.schedule(election))
                await stop.wait()
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
                log(self.replica, "stopping: resigning and stopping the node")
            # The last replicas to stop have no quorum left to revoke with.
            with contextlib.suppress(raftlock.RaftlockError, asyncio.TimeoutError):
                await asyncio.wait_for(client.close(), 5)
        http.close()
        log(self.replica, "stopped")

    async def schedule(self, election: raftlock.asyncio.LeaderElection) -> None:
        """Runs the job every interval while this replica leads."""
        leading = False
        while True:
            if election.is_leader:
                fence = election.fence
                if not leading:
                    log(self.replica, f"elected (fence {fence}): running the job")
                leading = True
                try:
                    self.register.write(fence, self.replica)
                except StaleFenceError as e:
                    log(self.replica, f"the register refused the job's write: {e}")
            elif leading:
                leading = False
                log(self.replica, "no longer the leader: job paused")
            await asyncio.sleep(self.interval)

    def status(self) -> dict[str, Any]:
        node = self.node.status() if self.node.running else None
        return {
            "replica": self.replica,
            "job_leader": bool(self.election and self.election.is_leader),
            "node_role": node.role if node else "stopped",
            "node_leader": node.leader if node else None,
            "members": sorted(m.id for m in node.members) if node else [],
            "applied_index": node.applied_index if node else 0,
        }

    async def serve_http(self, addr: str) -> asyncio.Server:
        host, _, port = addr.rpartition(":")

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            request = (await reader.readline()).decode(errors="replace").split()
            path = request[1] if len(request) > 1 else "/"
            status = self.status()
            if path == "/healthz":
                code, body = (200 if self.node.running else 503), "ok"
            elif path == "/readyz":
                code, body = (200 if status["node_leader"] else 503), "ready"
            elif path == "/status":
                code, body = 200, json.dumps(status)
            else:
                code, body = 404, "not found"
            writer.write(
                f"HTTP/1.1 {code} -\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n{body}".encode()
            )
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()

        return await asyncio.start_server(answer, host or "0.0.0.0", int(port))


async def main() -> None:
    app = App()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await app.run(stop)


if __name__ == "__main__":
    asyncio.run(main())
