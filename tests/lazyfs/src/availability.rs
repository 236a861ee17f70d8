//! Whether FUSE mounts work here, so tests can skip loudly instead of failing
//! on machines without `/dev/fuse` or the right to mount — except under CI
//! (`CI` set), where a test that cannot run fails ([`skip_unless_ci`]).

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
///     raftlock_lazyfs::skip_unless_ci("my test", &reason);
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

/// Prints `SKIPPED: <test> needs FUSE: <reason>` for a test that cannot run
/// here, or, when the `CI` variable is set (not empty), fails it: CI must
/// run every test, and a skip there would pass unseen.
pub fn skip_unless_ci(test: &str, reason: &dyn std::fmt::Display) {
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    assert!(
        !ci,
        "{test} needs FUSE, which does not work here ({reason}), and CI is set: \
         CI must run it (a FUSE-capable machine: /dev/fuse, root)"
    );
    eprintln!("SKIPPED: {test} needs FUSE: {reason}");
}
