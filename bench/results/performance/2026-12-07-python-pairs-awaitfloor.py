"""asyncio's own cost per await: 32 tasks, each awaiting a future that
``call_soon`` resolves, 20 000 times; prints CPU and wall time per await."""

import asyncio
import time

N = 20000
TASKS = 32


async def main() -> None:
    loop = asyncio.get_running_loop()

    async def task() -> None:
        for _ in range(N):
            fut = loop.create_future()
            loop.call_soon(fut.set_result, None)
            await fut

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(task() for _ in range(TASKS)))
    n = TASKS * N
    cpu = (time.process_time() - cpu0) * 1e6 / n
    wall = (time.perf_counter() - wall0) * 1e6 / n
    print(f"{cpu:.2f} us cpu per await, {wall:.2f} us wall")


asyncio.run(main())
