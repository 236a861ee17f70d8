"""One client shared between threads (clients/python/README.md, "Blocking
calls": clients are safe to share between threads)."""

from __future__ import annotations

import threading
import time
import uuid

import raftlock

THREADS = 12
ROUNDS = 8


def test_one_client_shared_between_threads_answers_every_call_and_excludes(
    client: raftlock.Client,
) -> None:
    """Twelve threads on one client, at once: each takes, checks and
    releases a lock of its own, then one common lock, under which it
    increments a shared counter by read, pause, write. Every call is
    answered, every thread finishes, no two threads are ever inside the
    common lock together (the counter loses no increment, the occupancy
    never exceeds one) and its fences grow in the order it was held. Seen
    failing when the common lock was taken with one owner for all threads
    (`owner="shared"`, a client that mixed up its callers): several
    threads entered at once and the counter lost increments."""
    prefix = f"py/threads-{uuid.uuid4().hex[:12]}"
    common = f"{prefix}/common"
    guard = threading.Lock()  # guards only the test's own bookkeeping
    counter = 0
    inside = 0
    most_inside = 0
    fences: list[int] = []
    answered = 0
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def count_answer() -> None:
        nonlocal answered
        with guard:
            answered += 1

    def work(i: int) -> None:
        nonlocal counter, inside, most_inside
        try:
            start.wait(30)
            own = f"{prefix}/own-{i}"
            for _ in range(ROUNDS):
                with client.lock(own, timeout=30) as mine:
                    count_answer()
                    assert client.check(own, mine.fence)
                    count_answer()
                    fence = mine.fence
                count_answer()
                assert not client.check(own, fence)
                count_answer()
                with client.lock(common, timeout=120) as held:
                    count_answer()
                    with guard:
                        inside += 1
                        most_inside = max(most_inside, inside)
                        fences.append(held.fence)
                    seen = counter
                    time.sleep(0.002)  # lets another thread in, were it allowed
                    counter = seen + 1
                    with guard:
                        inside -= 1
                count_answer()
        except BaseException as e:  # reported below, with the thread's number
            errors.append(RuntimeError(f"thread {i}: {e!r}"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 240  # under pytest's 300 s per test
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a thread's call was never answered"
    assert errors == []
    assert answered == THREADS * ROUNDS * 6
    assert most_inside == 1
    assert counter == THREADS * ROUNDS
    assert fences == sorted(fences)
    assert len(set(fences)) == len(fences)
    assert not client.lock(common).locked()
