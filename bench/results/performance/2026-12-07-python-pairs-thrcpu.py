"""Threads W2: process CPU per pair, clients made in their threads."""

import os
import sys
import threading
import time

import raftlock

E = sys.argv[1].split(",")
VARIANT = sys.argv[2] if len(sys.argv) > 2 else "lock"
DUR = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
TASKS = 32
start_at = time.monotonic() + 2
end = start_at + DUR
count = [0]
cl = threading.Lock()


def worker(i):
    c = raftlock.Client(E)
    c.session_lease()
    name = f"tc{os.getpid()}/{i}"
    n = 0
    from raftlock import _native

    owner = _native.new_owner()
    while time.monotonic() < end:
        if VARIANT.endswith("native"):
            g = c._native.lock(name, None, None, True, "exclusive", 1, 0, owner, None)
            g.release()
        else:
            with c.lock(name):
                pass
        if time.monotonic() > start_at:
            n += 1
    with cl:
        count[0] += n


ts = [threading.Thread(target=worker, args=(i,)) for i in range(TASKS)]
for t in ts:
    t.start()
time.sleep(start_at - time.monotonic())
p0 = time.process_time()
time.sleep(DUR)
p = time.process_time() - p0
for t in ts:
    t.join()
print(
    f"{VARIANT}: {count[0] / DUR:.0f} pairs/s process {p * 1e6 / count[0]:.1f} us/pair"
)
os._exit(0)
