"""The blocking API against a 3-node cluster."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import raftlock
from conftest import Cluster, wait_until


@pytest.fixture
def name() -> str:
    return f"py/{uuid.uuid4().hex[:12]}"


def test_a_lock_excludes_others_and_its_fence_grows(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    with client.lock(name) as held:
        first = held.fence
        assert held.owned()
        assert held.locked()
        assert client.check(name, first)
        rival = other.lock(name)
        assert rival.acquire(blocking=False) is False
        assert rival.acquire(timeout=0.3) is False
        assert not rival.owned()
    assert not client.check(name, first)
    assert not other.lock(name).locked()
    with other.lock(name) as second:
        assert second.fence > first


def test_a_lock_is_reentrant_per_owner(client: raftlock.Client, name: str) -> None:
    lock = client.lock(name)
    with lock:
        fence = lock.fence
        with lock:
            assert lock.fence == fence
            info = client.describe(name)
            assert info is not None
            assert info.holders[0].count == 2
        # One level released: still held.
        assert lock.owned()
        same_owner = client.lock(name, owner=lock.owner)
        assert same_owner.acquire(blocking=False)
        assert same_owner.fence == fence
        same_owner.release()
    assert not lock.locked()


def test_waiters_are_granted_in_order(client: raftlock.Client, cluster: Cluster, name: str) -> None:
    order: list[int] = []
    clients = [raftlock.Client(cluster.endpoints, session_ttl=3) for _ in range(3)]
    with client.lock(name):
        threads = []
        for i, c in enumerate(clients):

            def wait(i: int = i, c: raftlock.Client = c) -> None:
                with c.lock(name, timeout=30):
                    order.append(i)

            t = threading.Thread(target=wait)
            t.start()
            threads.append(t)
            wait_until(
                f"waiter {i} queued",
                lambda i=i: len((client.describe(name) or _empty()).waiters) == i + 1,
            )
    for t in threads:
        t.join(30)
    assert order == [0, 1, 2]
    for c in clients:
        c.close()


def _empty() -> raftlock.LockInfo:
    class Empty:
        waiters: list[raftlock.Waiter] = []  # noqa: RUF012

    return Empty()  # type: ignore[return-value]


def test_with_raises_timeout_and_errors_have_one_hierarchy(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    with client.lock(name):
        with pytest.raises(raftlock.Timeout) as timed_out:  # noqa: SIM117
            with other.lock(name, timeout=0.2):
                pytest.fail("entered a held lock")
        assert isinstance(timed_out.value, TimeoutError)
        assert isinstance(timed_out.value, raftlock.RaftlockError)
    with pytest.raises(raftlock.NotHeld):
        client.lock(name).release()
    with pytest.raises(raftlock.InvalidArgument):
        client.lock(name, ttl=0)
    with pytest.raises(raftlock.InvalidArgument) as bad_name:
        client.lock("x" * 600).acquire()
    assert isinstance(bad_name.value, ValueError)
    assert "512" in str(bad_name.value)
    with pytest.raises(raftlock.InvalidArgument):
        client.grant_lease(86_401)


def test_a_force_released_lock_is_reported_lost(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    reasons: list[str] = []
    called = threading.Event()

    def on_lost(reason: str) -> None:
        reasons.append(reason)
        # The callback runs on a thread of its own: the blocking API works.
        other.describe(name)
        called.set()

    lock = client.lock(name, on_lost=on_lost)
    lock.acquire()
    assert not lock.lost.is_set()
    assert other.force_release(name) == 1
    assert lock.lost.wait(15), "the loss was noticed"
    assert called.wait(15)
    assert "force-released" in reasons[0]
    assert not lock.owned()
    with pytest.raises(raftlock.LockLost):
        lock.ensure_valid()
    fenced = raftlock.Fenced(lock, [])
    with pytest.raises(raftlock.LockLost):
        fenced.write(lambda log, fence: log.append(fence))
    assert fenced.resource == []
    with pytest.raises(raftlock.LockLost):
        lock.acquire()  # re-entering a lost hold
    with pytest.raises(raftlock.LockLost):
        lock.release()


def test_fenced_passes_the_fence_while_held(client: raftlock.Client, name: str) -> None:
    with client.lock(name) as lock:
        log: list[int] = []
        raftlock.Fenced(lock, log).write(lambda res, fence: res.append(fence))
        assert log == [lock.fence]


def test_a_lock_on_a_lease_of_its_own(client: raftlock.Client, name: str) -> None:
    with client.lock(name, ttl=2) as lock:
        assert lock.lease != client.session_lease()
        ttl = client.time_to_live(lock.lease)
        assert ttl.granted_ttl == 2
        assert (name, lock.owner, True) in ttl.attachments
        time.sleep(2.5)  # kept alive past its TTL
        assert lock.owned()
        lease = lock.lease
    with pytest.raises(raftlock.LeaseExpired):
        client.time_to_live(lease)


def test_semaphore_and_rwlock(client: raftlock.Client, other: raftlock.Client, name: str) -> None:
    sem = client.semaphore(name + "/sem", 2)
    assert sem.acquire()
    assert sem.acquire()
    assert not other.semaphore(name + "/sem", 2).acquire(blocking=False)
    sem.release()
    with other.semaphore(name + "/sem", 2) as theirs:
        assert theirs.fence > 0
    sem.release()

    rw = client.rwlock(name + "/rw")
    theirs_rw = other.rwlock(name + "/rw")
    with rw.read(), theirs_rw.read():
        info = client.describe(name + "/rw")
        assert info is not None
        assert len(info.holders) == 2
        assert {h.mode for h in info.holders} == {"shared"}
        assert not theirs_rw.write().acquire(blocking=False)
    with theirs_rw.write():
        assert not rw.read().acquire(blocking=False)


def test_a_task_lock_runs_a_job_once(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    ran: list[str] = []
    barrier = threading.Barrier(2)

    def worker(c: raftlock.Client, who: str) -> None:
        barrier.wait()
        c.task_lock(name, min_hold=1, max_hold=10).run(lambda: ran.append(who))

    threads = [
        threading.Thread(target=worker, args=(c, w)) for c, w in ((client, "a"), (other, "b"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(ran) == 1
    # The run returned at once; the lock is let go once min_hold has passed.
    again = other.task_lock(name, min_hold=0.1, max_hold=10)
    taken: list[raftlock.TaskGuard] = []

    def took_it() -> bool:
        guard = again.try_acquire()
        if guard is not None:
            taken.append(guard)
        return guard is not None

    wait_until("the task lock is free after min_hold", took_it)
    taken[0].finish()


def test_election_campaign_observe_resign(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    election = client.election(name)
    assert election.leader() is None
    seen: list[bytes | None] = []
    watching = threading.Event()

    def watch() -> None:
        for leader in other.election(name).observe():
            seen.append(None if leader is None else leader.value)
            watching.set()
            if len(seen) >= 4:
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert watching.wait(15), "observe answers the current state first"
    with election.campaign("node-a") as leadership:
        assert leadership.is_leader
        leader = other.election(name).leader()
        assert leader is not None
        assert leader.value == b"node-a"
        assert leader.fence == leadership.fence
        with pytest.raises(raftlock.Timeout):
            other.election(name).campaign("node-b", timeout=0.3)
        leadership.proclaim("node-a2")
        wait_until("observed the proclaim", lambda: b"node-a2" in seen)
    assert not leadership.is_leader
    watcher.join(15)
    assert seen == [None, b"node-a", b"node-a2", None]


def test_leader_election_fails_over_between_processes(
    client: raftlock.Client, other: raftlock.Client, name: str
) -> None:
    a = client.leader_election(name, "a")
    b = other.leader_election(name, "b")
    with a:
        assert a.wait_for_leader(15)
        b.start()
        time.sleep(0.5)
        assert a.is_leader
        assert not b.is_leader
    assert b.wait_for_leader(15), "b took over when a stopped"
    assert b.is_leader
    b.stop()


def test_ctrl_c_interrupts_a_blocking_wait(
    cluster: Cluster, client: raftlock.Client, name: str
) -> None:
    import signal
    import subprocess
    import sys

    # Python leaves SIGINT alone when it starts with SIGINT ignored (as a
    # test run started in the background from a script passes on), and
    # then Ctrl-C never reaches the waiter: install Python's handler.
    script = (
        "import signal, sys, raftlock\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "c = raftlock.Client(sys.argv[1])\n"
        "print('WAITING', flush=True)\n"
        "try:\n"
        "    c.lock(sys.argv[2]).acquire()\n"
        "except KeyboardInterrupt:\n"
        "    print('INTERRUPTED', flush=True)\n"
    )
    with client.lock(name):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, ",".join(cluster.endpoints), name],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "WAITING"
        wait_until(
            "the waiter queued", lambda: len((client.describe(name) or _empty()).waiters) == 1
        )
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert out.strip() == "INTERRUPTED"
        wait_until(
            "the interrupted waiter left the queue",
            lambda: not (client.describe(name) or _empty()).waiters,
        )


def test_a_forked_child_is_told_not_hung(cluster: Cluster) -> None:
    import subprocess
    import sys

    script = (
        "import os, sys, raftlock\n"
        "c = raftlock.Client(sys.argv[1])\n"
        "c.session_lease()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        raftlock.Client(sys.argv[1]).session_lease()\n"
        "    except RuntimeError as e:\n"
        "        print('CHILD', 'fork' in str(e), flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print('PARENT', c.session_lease() > 0, flush=True)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, ",".join(cluster.endpoints)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stdout.split("\n")[:2] == ["CHILD True", "PARENT True"], out
