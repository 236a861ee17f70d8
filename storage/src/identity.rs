//! The data dir's identity file, `raftlock.identity`: which node the dir
//! belongs to, how its cluster was formed, and the floor of Raft state the
//! dir is known to hold.
//!
//! It lives beside sled's files, not inside them, so that it survives what
//! can go wrong inside sled: sled recovers its log up to the first record
//! that fails its checksum and drops everything after it without a word,
//! and an emptied or replaced sled directory looks like a new node. The
//! file is JSON for operators to read, followed by a `crc32c:` line, and is
//! replaced durably (temporary file, `fsync`, rename, `fsync` of the dir).
//!
//! The floor is raised as the node runs: the vote's term whenever a vote is
//! saved (before openraft is told it was), the committed index and the log
//! end at most once a [`FLOOR_INTERVAL`] after a sync, and exactly at a clean
//! shutdown. On open the stored state must reach it (see
//! [`crate::node_db::open`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::codec::FORMAT;
use crate::disk_sync::{io_error, write_file_durably};
use crate::error::Error;
use crate::types::NodeId;

/// The file's name in the data dir.
pub const IDENTITY_FILE: &str = "raftlock.identity";

/// How often, at most, a running node raises its floor's committed index.
pub const FLOOR_INTERVAL: Duration = Duration::from_secs(1);

/// How a data dir's cluster was formed, as the node was told when the dir
/// was created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bootstrap {
    /// A one-node cluster of this node (no `--initial-cluster`, no `--join`).
    SingleNode,
    /// A new cluster of these members (`--initial-cluster`, sorted by id).
    Cluster { members: String },
    /// Added to an existing cluster (`--join`).
    Join,
}

/// The least Raft state a data dir is known to hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floor {
    /// The highest term this node saved a vote in.
    pub vote_term: u64,
    /// A committed log index whose entry this node had synced.
    pub committed: u64,
    /// The log's last index at the last clean shutdown (0 while running).
    pub last_log_at_shutdown: u64,
    /// Whether the node stopped cleanly after writing this floor.
    pub clean_shutdown: bool,
}

/// The identity file's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Record format of the data dir (see [`crate::codec::FORMAT`]).
    pub format: u8,
    /// The node id the dir was created for.
    pub node_id: NodeId,
    /// A random id made when the dir was created: tells copies of a dir
    /// from dirs created independently.
    pub dir_id: Uuid,
    /// How the cluster was formed.
    pub bootstrap: Bootstrap,
    /// The cluster this dir belongs to: made by the node that initialized
    /// the cluster, learnt by the others from the first peer message that
    /// carries it. `None` until then (and in dirs from builds before
    /// cluster ids).
    #[serde(default)]
    pub cluster_id: Option<Uuid>,
    /// How many times a node has started on this dir. Peers remember the
    /// highest they saw, so a copy of an old dir shows up as going back.
    #[serde(default)]
    pub boots: u64,
    /// For a node that joined (`--join`): the log index of the first
    /// applied membership that listed it. Before that, memberships without
    /// it are the cluster's history, not its removal. `None` until then;
    /// unused by the members a cluster was formed with (listed from its
    /// first membership on).
    #[serde(default)]
    pub admitted_at: Option<u64>,
    /// The least state the dir holds.
    pub floor: Floor,
}

impl Identity {
    /// A new dir's identity.
    pub fn new(node_id: NodeId, bootstrap: Bootstrap) -> Self {
        Self {
            format: FORMAT,
            node_id,
            dir_id: Uuid::new_v4(),
            bootstrap,
            cluster_id: None,
            boots: 0,
            admitted_at: None,
            floor: Floor::default(),
        }
    }

    /// Reads the identity file in `dir`; `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<Self>, Error> {
        let path = dir.join(IDENTITY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, "read", e)),
        };
        let what = IDENTITY_FILE;
        let (body, crc_line) = text
            .trim_end()
            .rsplit_once('\n')
            .ok_or_else(|| Error::corrupt(what, "no crc32c line"))?;
        let stored = crc_line
            .strip_prefix("crc32c: ")
            .and_then(|hex| u32::from_str_radix(hex.trim(), 16).ok())
            .ok_or_else(|| Error::corrupt(what, "no crc32c line"))?;
        let computed = crc32c::crc32c(body.as_bytes());
        if stored != computed {
            return Err(Error::Checksum {
                what: what.into(),
                stored,
                computed,
            });
        }
        let identity: Self = serde_json::from_str(body).map_err(|e| Error::decode(what, e))?;
        if identity.format != FORMAT {
            return Err(Error::Format {
                what: what.into(),
                found: identity.format,
                reads: FORMAT,
            });
        }
        Ok(Some(identity))
    }

    /// Replaces the identity file in `dir` durably.
    pub fn write(&self, dir: &Path) -> Result<(), Error> {
        let body =
            serde_json::to_string_pretty(self).map_err(|e| Error::encode(IDENTITY_FILE, e))?;
        let crc = crc32c::crc32c(body.as_bytes());
        let text = format!("{body}\ncrc32c: {crc:08x}\n");
        write_file_durably(&dir.join(IDENTITY_FILE), text.as_bytes())
    }
}

/// Keeps the identity file's floor up to date while the node runs.
#[derive(Debug)]
pub struct FloorKeeper {
    dir: PathBuf,
    inner: Mutex<Kept>,
}

#[derive(Debug)]
struct Kept {
    identity: Identity,
    /// What the node has made durable so far (may run ahead of the file).
    synced: Floor,
    written_at: Instant,
}

impl FloorKeeper {
    /// Takes over `identity`, as last written to `dir`.
    pub(crate) fn new(dir: &Path, identity: Identity) -> Self {
        let synced = identity.floor;
        Self {
            dir: dir.to_path_buf(),
            inner: Mutex::new(Kept {
                identity,
                synced,
                written_at: Instant::now(),
            }),
        }
    }

    /// A vote in `term` was synced: raise the floor now, before openraft
    /// hears the vote was saved. Blocking.
    pub(crate) fn vote_synced(&self, term: u64) -> Result<(), Error> {
        let mut kept = self.inner.lock().map_err(|_| Error::Poisoned)?;
        kept.synced.vote_term = kept.synced.vote_term.max(term);
        if kept.synced.vote_term > kept.identity.floor.vote_term {
            self.write(&mut kept, false)?;
        }
        Ok(())
    }

    /// Entries up to `committed` are synced here and committed: raise the
    /// floor if the file's is older than [`FLOOR_INTERVAL`]. Blocking.
    pub(crate) fn committed_synced(&self, committed: u64) -> Result<(), Error> {
        let mut kept = self.inner.lock().map_err(|_| Error::Poisoned)?;
        kept.synced.committed = kept.synced.committed.max(committed);
        if kept.synced.committed > kept.identity.floor.committed
            && kept.written_at.elapsed() >= FLOOR_INTERVAL
        {
            self.write(&mut kept, false)?;
        }
        Ok(())
    }

    /// The cluster id the dir records, if any.
    pub(crate) fn cluster_id(&self) -> Option<Uuid> {
        self.inner.lock().ok().and_then(|k| k.identity.cluster_id)
    }

    /// How many times a node has started on the dir, this start included.
    pub(crate) fn boots(&self) -> u64 {
        self.inner.lock().map_or(0, |k| k.identity.boots)
    }

    /// From which applied membership on (its log index) a membership
    /// without this node means the node was removed; `None` while a joining
    /// node has not yet seen itself listed.
    pub(crate) fn admitted_at(&self) -> Option<u64> {
        self.inner
            .lock()
            .ok()
            .and_then(|k| match k.identity.bootstrap {
                Bootstrap::Join => k.identity.admitted_at,
                Bootstrap::SingleNode | Bootstrap::Cluster { .. } => Some(0),
            })
    }

    /// A joining node applied a membership listing it, at log `index`:
    /// records it durably, once. Blocking.
    pub(crate) fn record_admission(&self, index: u64) -> Result<(), Error> {
        let mut kept = self.inner.lock().map_err(|_| Error::Poisoned)?;
        if kept.identity.admitted_at.is_some() {
            return Ok(());
        }
        kept.identity.admitted_at = Some(index);
        let clean = false;
        self.write(&mut kept, clean)
    }

    /// Records the dir's cluster id durably. Refuses to replace a different
    /// one. Blocking.
    pub(crate) fn record_cluster_id(&self, cluster_id: Uuid) -> Result<(), Error> {
        let mut kept = self.inner.lock().map_err(|_| Error::Poisoned)?;
        match kept.identity.cluster_id {
            Some(recorded) if recorded == cluster_id => Ok(()),
            Some(recorded) => Err(Error::ClusterMismatch {
                recorded,
                offered: cluster_id,
            }),
            None => {
                kept.identity.cluster_id = Some(cluster_id);
                let clean = false;
                self.write(&mut kept, clean)
            }
        }
    }

    /// The node stops cleanly with its log ending at `last_log`: record the
    /// exact floor. Blocking.
    pub(crate) fn close(&self, last_log: u64) -> Result<(), Error> {
        let mut kept = self.inner.lock().map_err(|_| Error::Poisoned)?;
        kept.synced.last_log_at_shutdown = last_log;
        self.write(&mut kept, true)
    }

    fn write(&self, kept: &mut Kept, clean: bool) -> Result<(), Error> {
        let mut identity = kept.identity.clone();
        identity.floor = Floor {
            clean_shutdown: clean,
            last_log_at_shutdown: if clean {
                kept.synced.last_log_at_shutdown
            } else {
                0
            },
            ..kept.synced
        };
        identity.write(&self.dir)?;
        kept.identity = identity;
        kept.written_at = Instant::now();
        Ok(())
    }
}
