//! Whether FUSE mounts work here, so tests can skip loudly instead of failing
//! on machines without `/dev/fuse` or the right to mount.

use std::path::Path;
use std::sync::OnceLock;

use crate::mount::LazyFs;

/// Why a FUSE mount cannot be made here (no /dev/fuse, no permission, ...).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(String);

/// Ok when /dev/fuse exists and a test mount works; otherwise the reason.
///
/// The probe (mount a lazy filesystem in a temporary directory, write, read
/// back, unmount) runs once per process; later calls return its result.
///
/// ```no_run
/// if let Err(reason) = raftlock_lazyfs::check_available() {
///     eprintln!("SKIPPED: {reason}");
///     return;
/// }
/// ```
pub fn check_available() -> Result<(), Unavailable> {
    static PROBE: OnceLock<Result<(), Unavailable>> = OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

/// Mounts, writes and reads one file, and unmounts.
fn probe() -> Result<(), Unavailable> {
    if !Path::new("/dev/fuse").exists() {
        return Err(Unavailable("/dev/fuse does not exist".to_owned()));
    }
    let dir = tempfile::tempdir()
        .map_err(|e| Unavailable(format!("cannot make a temporary mountpoint: {e}")))?;
    let fs = LazyFs::mount(dir.path()).map_err(|e| Unavailable(e.to_string()))?;
    let file = fs.mountpoint().join("probe");
    std::fs::write(&file, b"probe")
        .and_then(|()| std::fs::read(&file))
        .map_err(|e| Unavailable(format!("a test mount does not answer: {e}")))
        .and_then(|read| match read.as_slice() {
            b"probe" => Ok(()),
            _ => Err(Unavailable("a test mount reads back wrong data".to_owned())),
        })
}
