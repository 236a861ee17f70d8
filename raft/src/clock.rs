//! The wall clock, read in one place. It stamps entries and peer messages
//! for display and for the peer messages' freshness check; no replicated
//! decision reads it (apply never does).

/// Wall clock in ms since the Unix epoch (0 if the clock is before it).
pub fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
