//! Mounting and unmounting: what happens to the mount when the `LazyFs` goes.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use raftlock_lazyfs::{Error, LazyFs};

use crate::fixture::mount;

/// Whether `path` is a mountpoint, from `/proc/self/mountinfo`.
fn is_mounted(path: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let path = path.to_str().expect("utf-8 temp path");
    mounts
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(path))
}

/// Fails if dropping the handle left the filesystem mounted.
#[test]
fn drop_unmounts() {
    let Some(m) = mount() else { return };
    let path = m.fs.mountpoint().to_path_buf();
    assert!(is_mounted(&path));
    drop(m.fs);
    assert!(!is_mounted(&path));
}

/// Fails if dropping the handle while a file is open hung, or cut the
/// open file off: the mount is detached and keeps serving that file.
#[test]
fn drop_with_an_open_file_detaches() {
    let Some(m) = mount() else { return };
    let path = m.fs.mountpoint().to_path_buf();
    let mut file = std::fs::File::create(path.join("f")).expect("create");
    drop(m.fs);
    assert!(!is_mounted(&path));
    assert!(
        !path.join("f").exists(),
        "the path shows the directory beneath"
    );
    file.write_all(b"still served").expect("write after detach");
    file.sync_all().expect("fsync after detach");
}

/// Fails if `cut_power` pretended to work on a filesystem that is gone.
#[test]
fn cut_power_after_an_outside_unmount_is_an_error() {
    let Some(m) = mount() else { return };
    nix::mount::umount(m.fs.mountpoint()).expect("umount from outside");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match m.fs.cut_power() {
            Err(Error::NotMounted(path)) => return assert_eq!(path, m.fs.mountpoint()),
            Ok(()) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            other => panic!("expected NotMounted, got {other:?}"),
        }
    }
}

/// Fails if a second mount on the same (now busy) directory were allowed.
#[test]
fn mounting_over_a_mount_is_refused() {
    let Some(m) = mount() else { return };
    std::fs::write(m.path("f"), b"").expect("write");
    let again = LazyFs::mount(m.fs.mountpoint());
    assert!(
        matches!(again, Err(Error::MountpointNotEmpty(_))),
        "{again:?}"
    );
}
