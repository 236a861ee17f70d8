//! Counters a test reads to see what a workload asked of the filesystem.

/// What the filesystem has seen since it was mounted. A snapshot: later calls
/// to [`LazyFs::stats`](crate::LazyFs::stats) return fresh numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// `fsync` and `fdatasync` calls on files (the FUSE `fsync` operation).
    pub fsync_calls: u64,
    /// `fsync` calls on directories (the FUSE `fsyncdir` operation).
    pub fsyncdir_calls: u64,
    /// FUSE `write` requests: one per `write` syscall, or one per MiB of a
    /// larger one (the kernel's default `fs.fuse.max_pages_limit`).
    pub write_calls: u64,
    /// Bytes of file data the last [`cut_power`](crate::LazyFs::cut_power)
    /// dropped, counted in whole pages of unsynced writes (clipped to the file
    /// size) plus the durable size of files that vanished.
    pub last_cut_dropped_bytes: u64,
    /// Power cuts so far.
    pub cuts: u64,
}
