import asyncio, time
N = 20000
async def main():
    loop = asyncio.get_running_loop()
    async def task():
        for _ in range(N):
            fut = loop.create_future()
            loop.call_soon(fut.set_result, None)
            await fut
    t0 = time.process_time(); w0 = time.perf_counter()
    await asyncio.gather(*(task() for _ in range(32)))
    n = 32 * N
    print(f"{(time.process_time()-t0)*1e6/n:.2f} us cpu per await, {(time.perf_counter()-w0)*1e6/n:.2f} us wall")
asyncio.run(main())
