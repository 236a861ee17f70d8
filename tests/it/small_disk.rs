//! A tmpfs of a few MiB for one test, so a node's disk can fill in seconds.
//!
//! Mounting needs root. CI runs as root, so there a failed mount fails the
//! test; elsewhere (a developer's unprivileged shell) the test is skipped
//! with the reason printed.

use std::path::{Path, PathBuf};

/// A mounted tmpfs, unmounted (lazily) on drop.
pub struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts a tmpfs of `size` (`mount -o size=`, e.g. `"16m"`). `None`,
    /// after printing why, when it cannot and `CI` is unset; panics when it
    /// cannot and `CI` is set.
    pub fn mount_or_skip(size: &str, test: &str) -> Option<SmallDisk> {
        let problem = match SmallDisk::try_mount(size) {
            Ok(disk) => return Some(disk),
            Err(problem) => problem,
        };
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        assert!(
            !ci,
            "{test}: cannot mount a {size} tmpfs ({problem}); CI runs as root and must run this test"
        );
        eprintln!("SKIPPED {test}: cannot mount a {size} tmpfs ({problem}); it needs root");
        None
    }

    /// Mounts a tmpfs of `size`; panics when it cannot (the test needs
    /// root, as CI has).
    pub fn mount(size: &str) -> SmallDisk {
        SmallDisk::try_mount(size).unwrap_or_else(|problem| {
            panic!("cannot mount a tmpfs ({problem}; this test needs root, as CI has)")
        })
    }

    /// Mounts a tmpfs of `size`, or says why it cannot.
    fn try_mount(size: &str) -> Result<SmallDisk, String> {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Ok(SmallDisk { dir }),
            Ok(out) => Err(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )),
            Err(e) => Err(format!("cannot run mount: {e}")),
        }
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk with a file `filler` until `leave` bytes are free
    /// (as `statvfs` counts them), so a test fills the rest quickly and
    /// frees it all by removing that one file.
    pub fn fill_leaving(&self, leave: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let free = self.free_bytes();
        let len = free.saturating_sub(leave);
        std::fs::write(&filler, vec![0xA5u8; len as usize]).expect("write filler");
        filler
    }

    /// Bytes free for an unprivileged writer.
    pub fn free_bytes(&self) -> u64 {
        let out = std::process::Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(self.path())
            .output()
            .expect("run df");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .expect("df prints the free bytes")
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
