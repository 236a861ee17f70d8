//! The clock every event is stamped with: `CLOCK_MONOTONIC`, which all
//! processes on one machine share, so client processes and the harness
//! stamp on one time line.

/// Nanoseconds on the machine-wide monotonic clock.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_MONOTONIC must be readable");
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}
