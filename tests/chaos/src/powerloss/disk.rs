//! The disk a node keeps its data on during a power-loss run: a plain
//! directory, where a cut is only the kill -9 (whatever the node wrote
//! survives in the page cache), or a LazyFs mount, where a cut also drops
//! every write and namespace change no fsync covered.

use std::path::{Path, PathBuf};

use raftlock_lazyfs::{CutPoint, Fired, LazyFs};

use crate::Error;

/// Which disk to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiskKind {
    /// LazyFs: unsynced writes are lost at a cut (the real test).
    Lazy,
    /// A plain directory: kill -9 only (a control run).
    Plain,
}

impl DiskKind {
    /// The flag value (`lazy`, `plain`).
    pub fn label(self) -> &'static str {
        match self {
            DiskKind::Lazy => "lazy",
            DiskKind::Plain => "plain",
        }
    }
}

/// One node's disk.
pub enum DataDisk {
    /// A directory on the machine's own filesystem.
    Plain { root: PathBuf },
    /// A LazyFs mount, served by this process; unmounted on drop.
    Lazy(LazyFs),
}

/// Why `kind` cannot be used on this machine.
pub fn check_available(kind: DiskKind) -> Result<(), String> {
    match kind {
        DiskKind::Plain => Ok(()),
        DiskKind::Lazy => raftlock_lazyfs::check_available().map_err(|e| e.to_string()),
    }
}

impl DataDisk {
    /// A disk of `kind` at `root`, which is created (empty) if missing, with
    /// an empty data dir on it.
    pub fn create(kind: DiskKind, root: &Path) -> Result<DataDisk, Error> {
        std::fs::create_dir_all(root).map_err(Error::io(format!("create {}", root.display())))?;
        let disk =
            match kind {
                DiskKind::Plain => DataDisk::Plain {
                    root: root.to_path_buf(),
                },
                DiskKind::Lazy => DataDisk::Lazy(LazyFs::mount(root).map_err(|e| {
                    Error::Setup(format!("mount LazyFs at {}: {e}", root.display()))
                })?),
            };
        disk.provision()?;
        Ok(disk)
    }

    /// Where the disk is.
    pub fn root(&self) -> &Path {
        match self {
            DataDisk::Plain { root } => root,
            DataDisk::Lazy(fs) => fs.mountpoint(),
        }
    }

    /// The node's data dir on this disk.
    pub fn data_dir(&self) -> PathBuf {
        self.root().join("data")
    }

    /// Creates the data dir and makes that durable, as an operator
    /// provisioning a node would (`mkdir` + `sync`): the test is about
    /// what the node itself writes into it.
    fn provision(&self) -> Result<(), Error> {
        let dir = self.data_dir();
        std::fs::create_dir(&dir).map_err(Error::io(format!("create {}", dir.display())))?;
        let root = std::fs::File::open(self.root())
            .map_err(Error::io(format!("open {}", self.root().display())))?;
        root.sync_all()
            .map_err(Error::io(format!("fsync {}", self.root().display())))
    }

    /// Drops what was not synced. Every process using the disk must be
    /// dead first.
    pub fn cut_power(&self) -> Result<(), Error> {
        match self {
            DataDisk::Plain { .. } => Ok(()),
            DataDisk::Lazy(fs) => fs.cut_power().map_err(|e| {
                Error::Setup(format!("cut the power of {}: {e}", self.root().display()))
            }),
        }
    }

    /// Arms a cut point (see `stage`); a plain dir has none.
    pub fn arm(&self, point: CutPoint) {
        if let DataDisk::Lazy(fs) = self {
            fs.arm(point);
        }
    }

    /// Drops a cut point that has not fired.
    pub fn disarm(&self) {
        if let DataDisk::Lazy(fs) = self {
            fs.disarm();
        }
    }

    /// The operation the armed cut point fired on, if it did.
    pub fn fired(&self) -> Option<Fired> {
        match self {
            DataDisk::Plain { .. } => None,
            DataDisk::Lazy(fs) => fs.fired(),
        }
    }

    /// What the disk did so far, for the round's line in the summary.
    pub fn describe(&self) -> String {
        match self {
            DataDisk::Plain { .. } => "plain dir".into(),
            DataDisk::Lazy(fs) => {
                let s = fs.stats();
                format!(
                    "{} B dropped ({} fsyncs, {} dir fsyncs, {} writes so far)",
                    s.last_cut_dropped_bytes, s.fsync_calls, s.fsyncdir_calls, s.write_calls
                )
            }
        }
    }
}
