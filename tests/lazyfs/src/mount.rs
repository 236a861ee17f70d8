//! `LazyFs`: mounts the model with FUSE, cuts its power on request, and
//! unmounts it on drop.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use fuser::{BackgroundSession, Config, MountOption};
use nix::mount::MntFlags;

use crate::cut_point::{CutPoint, Fired};
use crate::error::Error;
use crate::filesystem::LazyFilesystem;
use crate::state::FsState;
use crate::stats::Stats;

/// Threads serving FUSE requests, each with its own `/dev/fuse` clone: enough
/// for several client processes at once on a 2-core machine.
const FUSE_THREADS: usize = 4;

/// A mounted lazy filesystem; unmounts on Drop.
///
/// The kernel serves it from this process's background threads, so any
/// process (this one included) can use the mountpoint like a disk whose
/// page cache [`cut_power`](LazyFs::cut_power) can drop.
#[derive(Debug)]
pub struct LazyFs {
    /// The mountpoint, canonical: the name the kernel knows it by, for unmounting.
    mountpoint: PathBuf,
    /// The model, shared with the FUSE threads.
    state: Arc<Mutex<FsState>>,
    /// The FUSE session serving the mount; taken when unmounting.
    session: Option<BackgroundSession>,
}

impl LazyFs {
    /// Mounts an empty lazy filesystem at `mountpoint` (an existing empty dir)
    /// and serves it from background threads. The root directory takes the
    /// mountpoint's owner and permissions.
    ///
    /// ```no_run
    /// use raftlock_lazyfs::LazyFs;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let fs = LazyFs::mount(dir.path())?;
    /// std::fs::write(fs.mountpoint().join("a"), b"never synced")?;
    /// fs.cut_power()?;
    /// assert!(!fs.mountpoint().join("a").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mount(mountpoint: &Path) -> Result<LazyFs, Error> {
        let inspect = |source| Error::Mountpoint {
            path: mountpoint.to_path_buf(),
            source,
        };
        let canonical = mountpoint.canonicalize().map_err(inspect)?;
        let metadata = canonical.metadata().map_err(inspect)?;
        if !metadata.is_dir() || canonical.read_dir().map_err(inspect)?.next().is_some() {
            return Err(Error::MountpointNotEmpty(mountpoint.to_path_buf()));
        }
        let state = FsState::new(metadata.mode(), metadata.uid(), metadata.gid());
        let state = Arc::new(Mutex::new(state));
        let filesystem = LazyFilesystem::new(Arc::clone(&state));
        let session =
            fuser::spawn_mount(filesystem, &canonical, &session_config()).map_err(|source| {
                Error::Mount {
                    path: mountpoint.to_path_buf(),
                    source,
                }
            })?;
        Ok(LazyFs {
            mountpoint: canonical,
            state,
            session: Some(session),
        })
    }

    /// Where the filesystem is mounted (canonicalized).
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Drops every change not covered by an fsync; see the crate docs.
    ///
    /// Kill every process with files open on the mount first: their handles
    /// turn stale (`EIO`), as if the machine had rebooted under them.
    pub fn cut_power(&self) -> Result<(), Error> {
        match &self.session {
            Some(session) if !session.guard.is_finished() => {}
            Some(_) | None => return Err(Error::NotMounted(self.mountpoint.clone())),
        }
        self.state().cut_power();
        Ok(())
    }

    /// Arms `point`: the power goes right before or after the operation it
    /// names, and stays off (every change held, unanswered) until the next
    /// [`cut_power`](LazyFs::cut_power). Kill the processes using the mount
    /// once [`fired`](LazyFs::fired) says so, then cut the power: the
    /// durable state is the one at the operation. Replaces an armed point
    /// and forgets what fired before.
    ///
    /// ```no_run
    /// use raftlock_lazyfs::{CutPoint, LazyFs, Op, When};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let fs = LazyFs::mount(dir.path())?;
    /// let point = CutPoint { op: Op::Create, path: "/wal/".into(), nth: 2, then: 0, when: When::After };
    /// fs.arm(point);
    /// // ... run a process that creates files in /wal/; once `fs.fired()`
    /// // is `Some`, kill it, then:
    /// fs.cut_power()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn arm(&self, point: CutPoint) {
        self.state().aim.arm(point);
    }

    /// Drops an armed cut point that has not fired.
    pub fn disarm(&self) {
        self.state().aim.armed = None;
    }

    /// The operation the armed cut point fired on, if it did.
    pub fn fired(&self) -> Option<Fired> {
        self.state().aim.fired.clone()
    }

    /// Counters: fsync calls, fsyncdir calls, bytes dropped by the last cut, writes.
    pub fn stats(&self) -> Stats {
        self.state().stats()
    }

    /// The locked model (see `LazyFilesystem::state` on poisoning).
    fn state(&self) -> std::sync::MutexGuard<'_, FsState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for LazyFs {
    /// Unmounts and waits for the FUSE threads. If files are still open on the
    /// mount, the unmount is lazy (`MNT_DETACH`): the mountpoint is freed at
    /// once and the threads serve the open files until they are closed.
    fn drop(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        // Let held callers go, or the FUSE threads never finish.
        self.state().aim.frozen = false;
        if session.guard.is_finished() {
            return; // unmounted from outside: nothing left to do
        }
        match nix::mount::umount(&self.mountpoint) {
            Ok(()) => {
                if let Err(error) = session.join() {
                    eprintln!(
                        "lazyfs: serving {} ended with: {error}",
                        self.mountpoint.display()
                    );
                }
            }
            Err(nix::errno::Errno::EBUSY) => {
                eprintln!(
                    "lazyfs: {} is busy (files still open); detaching it",
                    self.mountpoint.display()
                );
                if let Err(error) = nix::mount::umount2(&self.mountpoint, MntFlags::MNT_DETACH) {
                    eprintln!(
                        "lazyfs: detaching {} failed: {error}",
                        self.mountpoint.display()
                    );
                }
            }
            Err(error) => {
                eprintln!(
                    "lazyfs: unmounting {} failed: {error}",
                    self.mountpoint.display()
                );
            }
        }
    }
}

/// How the session mounts: named `lazyfs` in the mount table, served by
/// [`FUSE_THREADS`] threads.
fn session_config() -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("lazyfs".to_owned()),
        MountOption::Subtype("lazyfs".to_owned()),
    ];
    config.n_threads = Some(FUSE_THREADS);
    config.clone_fd = true;
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails to compile if `LazyFs` cannot be shared between threads (tests
    /// keep it in an `Arc` next to a cluster, or in async tasks).
    #[test]
    fn lazy_fs_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<LazyFs>();
    }

    /// Fails if a non-empty directory could be mounted over (hiding files).
    #[test]
    fn mount_refuses_a_non_empty_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("x"), b"").expect("write");
        match LazyFs::mount(dir.path()) {
            Err(Error::MountpointNotEmpty(path)) => assert_eq!(path, dir.path()),
            other => panic!("expected MountpointNotEmpty, got {other:?}"),
        }
        let missing = dir.path().join("missing");
        assert!(matches!(
            LazyFs::mount(&missing),
            Err(Error::Mountpoint { .. })
        ));
    }
}
