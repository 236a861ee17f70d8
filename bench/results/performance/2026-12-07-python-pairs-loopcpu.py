"""Loop-thread and process CPU per pair, asyncio W2, with variants."""

import asyncio
import os
import sys
import time

import raftlock.asyncio
from raftlock import _native

E = sys.argv[1].split(",")
VARIANT = sys.argv[2] if len(sys.argv) > 2 else "lock"
DUR = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
TASKS = 32


async def main():
    clients = [raftlock.asyncio.Client(E) for _ in range(TASKS)]
    for c in clients:
        await c.session_lease()
    end = time.monotonic() + 1 + DUR
    start_at = time.monotonic() + 1
    counts = [0]

    async def worker(i):
        c = clients[i]
        name = f"lc{os.getpid()}/{i}"
        n = c._native
        owner = _native.new_owner()
        while time.monotonic() < end:
            if VARIANT == "lock":
                async with c.lock(name):
                    pass
            elif VARIANT == "native":
                g = await n.lock(
                    name,
                    None,
                    None,
                    True,
                    "exclusive",
                    1,
                    0,
                    owner,
                    None,
                    on_lost=None,
                    aio=True,
                )
                await g.release(aio=True)
            if time.monotonic() > start_at:
                counts[0] += 1

    async def cpu():
        await asyncio.sleep(1)
        t0, p0 = time.thread_time(), time.process_time()
        await asyncio.sleep(DUR)
        return time.thread_time() - t0, time.process_time() - p0, counts[0]

    f = asyncio.ensure_future(cpu())
    await asyncio.gather(*(worker(i) for i in range(TASKS)))
    t, p, n = await f
    print(
        f"{VARIANT}: {n / DUR:.0f} pairs/s loop {t * 1e6 / n:.1f} us/pair process {p * 1e6 / n:.1f} us/pair"
    )
    for c in clients:
        await c.close()


asyncio.run(main())
