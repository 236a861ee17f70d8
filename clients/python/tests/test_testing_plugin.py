"""raftlock.testing, as a user's test suite uses it: the example below is a
small app (a report job that must run on one replica at a time and stop
as soon as its lock is lost) and its tests, on the plugin's fixtures
(`raftlock_node`, `raftlock_cluster`, `raftlock_client`,
`raftlock_async_client`), with no server started outside the test. The
README's "Testing your app" shows the same."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator

import raftlock
import raftlock.asyncio
from raftlock.testing import LocalCluster


class ReportJob:
    """The app: writes the report's pages while it holds `jobs/report`,
    asking the cluster before each page that it still does."""

    name = "jobs/report"

    def __init__(self, client: raftlock.Client) -> None:
        self.client = client
        self.stopped_on_loss = False

    def run(self, pages: Iterable[str]) -> list[str]:
        """The pages written; none if another replica runs the job."""
        lock = self.client.lock(self.name, timeout=0)
        if not lock.acquire():
            return []
        written: list[str] = []
        try:
            for page in pages:
                lock.ensure_owned()  # LockLost once another replica may hold it
                written.append(page)
        except raftlock.LockLost:
            self.stopped_on_loss = True
        finally:
            with contextlib.suppress(raftlock.RaftlockError):
                lock.release()
        return written


def test_one_replica_runs_the_job(raftlock_cluster: LocalCluster) -> None:
    with raftlock_cluster.client() as a, raftlock_cluster.client() as b:
        rival: list[str] = []

        def pages() -> Iterator[str]:
            yield "p1"
            rival.extend(ReportJob(b).run(["x"]))  # runs while `a` holds the lock
            yield "p2"

        assert ReportJob(a).run(pages()) == ["p1", "p2"]
        assert rival == []
        assert ReportJob(b).run(["x"]) == ["x"]  # free again


def test_the_job_stops_when_its_lock_is_force_released(
    raftlock_node: LocalCluster, raftlock_client: raftlock.Client
) -> None:
    job = ReportJob(raftlock_client)

    def pages() -> Iterator[str]:
        yield "p1"
        assert raftlock_node.force_release(ReportJob.name) == 1
        yield "p2"

    assert job.run(pages()) == ["p1"]
    assert job.stopped_on_loss


def test_the_job_runs_on_when_the_raft_leader_stops(raftlock_cluster: LocalCluster) -> None:
    leader = raftlock_cluster.leader_id()
    assert leader is not None
    with raftlock_cluster.client() as client:
        assert ReportJob(client).run(["p1"]) == ["p1"]
        raftlock_cluster.stop_node(leader)
        assert ReportJob(client).run(["p2"]) == ["p2"]  # the client fails over
        raftlock_cluster.restart_node(leader)
        assert ReportJob(client).run(["p3"]) == ["p3"]


async def test_the_asyncio_client_fixture(raftlock_async_client: raftlock.asyncio.Client) -> None:
    async with raftlock_async_client.lock(ReportJob.name) as lock:
        assert lock.fence > 0
        assert await raftlock_async_client.lock(ReportJob.name).acquire(blocking=False) is False


def test_a_node_is_ready_when_the_fixture_answers(raftlock_node: LocalCluster) -> None:
    assert raftlock_node.node.is_leader
    assert raftlock_node.node.status().members[0].id == 1


def test_force_release_sets_the_holders_lost_event(
    raftlock_node: LocalCluster, raftlock_client: raftlock.Client
) -> None:
    lost: list[str] = []
    lock = raftlock_client.lock("jobs/other", on_lost=lost.append)
    assert lock.acquire()
    assert raftlock_node.force_release("jobs/other") == 1
    assert lock.lost.wait(30), "the holder learns of the force-release"
    for _ in range(300):  # on_lost runs on a thread of its own
        if lost:
            break
        time.sleep(0.1)
    assert lost
