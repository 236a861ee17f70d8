"""Pure-Python overhead of `with client.lock(name)` (sync) and
`async with` (asyncio), the native calls replaced by stubs."""

import asyncio
import time

import raftlock
import raftlock.asyncio


class G:
    fence = 1
    lease = 1

    def ensure_valid(self):
        pass

    def is_held(self):
        return True

    def is_lost(self):
        return False

    def release(self, aio=False):
        if aio:
            return _done()
        return None


async def _none():
    return None


def _done():
    return _none()


class N:
    def lock(self, *a, on_lost=None, aio=False):
        if aio:

            async def g():
                return G()

            return g()
        return G()


def sync_bench(n):
    c = raftlock.Client.__new__(raftlock.Client)
    c._native = N()
    t = time.perf_counter()
    for _ in range(n):
        with c.lock("x"):
            pass
    return (time.perf_counter() - t) / n * 1e6


def sync_floor(n):
    nat = N()
    t = time.perf_counter()
    for _ in range(n):
        g = nat.lock("x", None, None, True, "exclusive", 1, 0, "o", None, on_lost=None)
        g.release()
    return (time.perf_counter() - t) / n * 1e6


async def aio_bench(n):
    c = raftlock.asyncio.Client.__new__(raftlock.asyncio.Client)
    c._native = N()
    t = time.perf_counter()
    for _ in range(n):
        async with c.lock("x"):
            pass
    return (time.perf_counter() - t) / n * 1e6


async def aio_floor(n):
    nat = N()
    t = time.perf_counter()
    for _ in range(n):
        g = await nat.lock(
            "x", None, None, True, "exclusive", 1, 0, "o", None, on_lost=None, aio=True
        )
        await g.release(aio=True)
    return (time.perf_counter() - t) / n * 1e6


n = 100000
for _ in range(2):
    print(f"sync lock {sync_bench(n):.2f} us  floor {sync_floor(n):.2f} us")
    print(
        f"aio  lock {asyncio.run(aio_bench(n)):.2f} us  floor {asyncio.run(aio_floor(n)):.2f} us"
    )
