//! A FUSE filesystem for tests that keeps every change not yet made durable
//! by an fsync in a volatile layer, and can cut the power: drop all of it, as
//! the Linux page cache would be lost on power loss. Jepsen's LazyFS is the
//! model; this one also makes the namespace (creates, renames, unlinks)
//! volatile until the directory is fsynced.
//!
//! ```no_run
//! use std::fs::File;
//! use std::io::Write;
//! use raftlock_lazyfs::LazyFs;
//!
//! let dir = tempfile::tempdir()?;
//! let fs = LazyFs::mount(dir.path())?;
//! let path = fs.mountpoint().join("log");
//! let mut log = File::create(&path)?;
//! log.write_all(b"kept")?;
//! log.sync_all()?; // the data is durable...
//! File::open(fs.mountpoint())?.sync_all()?; // ...and so is its name
//! log.write_all(b" lost")?; // never synced
//! drop(log);
//! fs.cut_power()?;
//! assert_eq!(std::fs::read(&path)?, b"kept");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The model (strict POSIX)
//!
//! Every inode has a current view (what reads, `stat` and `readdir` see) and
//! a durable view (what survives [`LazyFs::cut_power`]):
//!
//! - **File data**: `write`, `truncate`/`ftruncate` and `fallocate` change
//!   the current view only. `fsync` or `fdatasync` of *that file* (any handle
//!   on it) makes its data, size and metadata durable. `close`, `sync_file_range`
//!   and `sync`/`syncfs` make nothing durable (FUSE does not forward the last
//!   two for this kind of filesystem).
//! - **Namespace**: creating a file, directory or symlink, `unlink`, `rmdir`,
//!   `rename` and `link` change the current entry list of the directories
//!   involved. `fsync` of a directory (`fsyncdir`) makes *that directory's*
//!   entry list (and metadata) durable. A rename between two directories is
//!   durable only when both are synced; with one synced, a cut shows the file
//!   under both names (hard links) or under none.
//! - **Metadata** (`chmod`, `chown`, `utimes`) is durable with the next fsync
//!   of the inode (`fsyncdir` for directories).
//! - **A new file whose data was fsynced but whose directory never was
//!   disappears on a cut**, data and all: nothing durable names it. The same
//!   holds for a whole new subtree whose top directory's parent was not synced.
//!
//! A cut reverts every inode to its durable view, then walks the durable
//! entries from the root: inodes it does not reach vanish; a directory
//! reached twice (possible after one-sided cross-directory renames) keeps its
//! first name, like fsck would. Handles open at the cut are stale: later reads
//! and writes through them fail with `EIO`.
//!
//! The kernel caches nothing a cut could make stale: entry and attribute TTLs
//! are zero and files are opened with direct IO (no page cache), so right
//! after a cut the mountpoint shows exactly the durable state. A consequence:
//! shared `mmap` (`MAP_SHARED`) of files on the mount is refused (`ENODEV`).
//!
//! # Memory
//!
//! Everything is in memory, in 4 KiB pages shared between the views; a sync
//! copies page pointers, not bytes. A mount holds at most
//! [`CAPACITY_BYTES`] of file data in its current view (`ENOSPC` beyond),
//! plus the durable copies of pages overwritten since their last sync.
//!
//! # Layout
//!
//! - `mount` — [`LazyFs`]: mount, cut power, stats, unmount on drop.
//! - `availability` — [`check_available`]: can this machine mount FUSE?
//! - `filesystem` — the FUSE adapter: kernel requests to model calls, TTL 0, direct IO.
//! - `state` — the model: inode table, handles, lookups, counters.
//! - `namespace` — create, link, unlink, rmdir, rename, readdir.
//! - `file_io` — read, write, setattr, fallocate.
//! - `power` — fsync, fsyncdir and the power cut.
//! - `cut_point` — [`CutPoint`]: the power goes at a chosen operation.
//! - `inode`, `file_data` — one inode; one file's pages in both views.
//! - `limits` — every size bound; `stats`, `error` — public types.

#![warn(missing_docs)]

mod availability;
mod cut_point;
mod error;
mod file_data;
mod file_io;
mod filesystem;
mod inode;
mod limits;
mod mount;
mod namespace;
mod power;
mod state;
mod stats;

pub use availability::{check_available, skip_unless_ci, Unavailable};
pub use cut_point::{CutPoint, Fired, Op, When};
pub use error::Error;
pub use limits::CAPACITY_BYTES;
pub use mount::LazyFs;
pub use stats::Stats;
