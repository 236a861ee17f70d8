//! Every size bound of the filesystem, written once.

/// Bytes per page: the unit in which unsynced file data is tracked, synced and dropped.
pub(crate) const PAGE_SIZE: u64 = 4096;

/// Most bytes of file data one mount holds in its current view (what reads see);
/// a write that would need more fails with `ENOSPC`. Pages overwritten since the
/// last fsync are held twice (old durable copy and new volatile copy), so one
/// mount's memory stays below about twice this, plus small per-inode overhead.
pub const CAPACITY_BYTES: u64 = 1 << 30;

/// Largest file size a write, truncate or fallocate may produce (`EFBIG` beyond):
/// files are sparse, so this bounds offsets, not memory.
pub(crate) const MAX_FILE_SIZE: u64 = 1 << 40;

/// Longest name in a directory, as on ext4 (`ENAMETOOLONG` beyond).
pub(crate) const MAX_NAME_LEN: usize = 255;

/// Pages in [`CAPACITY_BYTES`].
pub(crate) const CAPACITY_PAGES: u64 = CAPACITY_BYTES / PAGE_SIZE;
