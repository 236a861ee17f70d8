//! What the storage test files share: opening a node directory, building
//! entries and commands, reading the state back, replaying the log.
// Each test file uses a different subset.
#![allow(dead_code)]

use raftlock_storage::command::Acquire;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::RaftLogReader;
use raftlock_storage::state::StateParts;
use raftlock_storage::{
    open, Applied, Bootstrap, ClientSeq, Command, Error, LogStore, Mode, NodeAddr, OpenOptions,
    Proposal, Request, StateMachineStore, TypeConfig,
};
#[allow(unused_imports)]
pub use raftlock_storage::{Entry, EntryPayload, LogId, Membership, SnapshotMeta, Vote};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use uuid::Uuid;

/// Log id `index` of `node`, leader in `term`.
pub fn log_id(term: u64, node: u64, index: u64) -> LogId {
    openraft::testing::log_id::<TypeConfig>(term, node, index)
}

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Opens the stores in `dir`, waiting for sled's lock (see
/// [`when_unlocked`]).
pub fn open_dir(
    dir: &Path,
) -> Result<(LogStore, StateMachineStore, UnboundedReceiver<Applied>), Error> {
    when_unlocked(
        || {
            let (tx, rx) = unbounded_channel();
            let (log, sm) = open(dir, &OpenOptions::new(1, Bootstrap::SingleNode), tx)?;
            Ok((log, sm, rx))
        },
        |e| matches!(e, Error::Sled(e) if is_lock_error(e)),
    )
}

/// Runs `open` until it fails other than with `locked`, for up to 2 s:
/// sled's flusher thread holds the directory's lock a moment after the
/// last handle is dropped (a test that reopened at once raced it under
/// load).
fn when_unlocked<T, E>(
    open: impl Fn() -> Result<T, E>,
    locked: impl Fn(&E) -> bool,
) -> Result<T, E> {
    for _ in 0..100 {
        match open() {
            Err(e) if locked(&e) => std::thread::sleep(std::time::Duration::from_millis(20)),
            other => return other,
        }
    }
    open()
}

fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("lock"))
}

pub fn normal(index: u64, command: Command) -> Entry {
    let origin = Some(ClientSeq {
        client: client_id(),
        seq: index,
        acked_below: 0,
        attempt: 0,
        anonymous: false,
    });
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Normal(Proposal::from(Request {
            origin,
            caller: Default::default(),
            time_ms: 1000,
            command,
        })),
    }
}

pub fn client_id() -> Uuid {
    Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef)
}

pub fn blank(index: u64) -> Entry {
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Blank,
    }
}

pub fn membership(index: u64) -> Entry {
    let nodes = BTreeMap::from([
        (
            1,
            NodeAddr {
                peer_addr: "127.0.0.1:7001".into(),
                client_addr: "127.0.0.1:8001".into(),
            },
        ),
        (
            2,
            NodeAddr {
                peer_addr: "127.0.0.1:7002".into(),
                client_addr: "127.0.0.1:8002".into(),
            },
        ),
    ]);
    let config = Membership::new(vec![BTreeSet::from([1, 2])], nodes).expect("a valid membership");
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Membership(config),
    }
}

pub fn acquire(name: &str, owner: &str, lease: u64) -> Command {
    Command::Acquire(Acquire {
        name: name.into(),
        owner: owner.into(),
        lease,
        mode: Mode::Exclusive,
        wait: true,
        value: None,
        lock_delay_ms: 0,
    })
}

pub fn parts(sm: &StateMachineStore) -> StateParts {
    sm.state().read().map(|s| s.to_parts()).unwrap_or_default()
}

/// Opens the node's sled database directly (stores closed), waiting for
/// sled's lock (see [`when_unlocked`]).
pub fn open_sled(dir: &Path) -> Result<sled::Db, sled::Error> {
    when_unlocked(|| sled::open(dir), is_lock_error)
}

/// The names of the database's trees, read straight from sled (stores
/// closed).
pub fn tree_names(dir: &Path) -> Result<Vec<Vec<u8>>, sled::Error> {
    let db = open_sled(dir)?;
    Ok(db.tree_names().iter().map(|n| n.to_vec()).collect())
}

/// One record frame of the write-ahead log, as the tests see it.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The segment file.
    pub path: std::path::PathBuf,
    /// The frame's offset in it.
    pub offset: usize,
    /// The frame's length (length and checksum words included).
    pub len: usize,
    /// The entry's index, when the record is an entry.
    pub entry: Option<u64>,
}

/// Every record frame of the log in `dir` (stores closed), segment by
/// segment. Frames are `length` (u32 LE), `CRC32C` (u32 LE), then the
/// body: a postcard enum whose variant 1 is an entry.
pub fn wal_frames(dir: &Path) -> Result<Vec<Frame>, Box<dyn std::error::Error>> {
    let mut paths: Vec<_> = std::fs::read_dir(dir.join(raftlock_storage::log_store::WAL_DIR))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    let mut frames = Vec::new();
    for path in paths {
        let bytes = std::fs::read(&path)?;
        let mut at = 0;
        while at + 8 <= bytes.len() {
            let len = u32::from_le_bytes(bytes[at..at + 4].try_into()?) as usize;
            if len == 0 {
                break;
            }
            let body = &bytes[at + 8..at + 8 + len];
            let entry = match body.split_first() {
                Some((1, rest)) => Some(postcard::from_bytes::<Entry>(rest)?.log_id.index),
                _ => None,
            };
            frames.push(Frame {
                path: path.clone(),
                offset: at,
                len: 8 + len,
                entry,
            });
            at += 8 + len;
        }
    }
    Ok(frames)
}

/// The frame of log entry `index` (its last one: a truncation may have
/// left older ones).
pub fn entry_frame(dir: &Path, index: u64) -> Result<Frame, Box<dyn std::error::Error>> {
    wal_frames(dir)?
        .into_iter()
        .rev()
        .find(|f| f.entry == Some(index))
        .ok_or_else(|| format!("no frame of entry {index}").into())
}

/// Removes log entry `index`'s record from its segment (stores closed), as
/// damage that takes one record out could leave the log.
pub fn lose_log_entry(dir: &Path, index: u64) -> Result<(), Box<dyn std::error::Error>> {
    let frame = entry_frame(dir, index)?;
    let mut bytes = std::fs::read(&frame.path)?;
    bytes.drain(frame.offset..frame.offset + frame.len);
    std::fs::write(&frame.path, bytes)?;
    Ok(())
}

/// Cuts the log's segment at log entry `index`'s record (stores closed):
/// that record and everything written after it are gone, as a crash with
/// a damaged tail could leave the log.
pub fn cut_log_at_entry(dir: &Path, index: u64) -> Result<(), Box<dyn std::error::Error>> {
    let frame = entry_frame(dir, index)?;
    let file = std::fs::OpenOptions::new().write(true).open(&frame.path)?;
    file.set_len(frame.offset as u64)?;
    Ok(())
}

/// What openraft does at start-up: re-apply the committed entries after the
/// state machine's last applied one.
pub async fn replay_committed(log: &mut LogStore, sm: &mut StateMachineStore) -> TestResult {
    let (applied, _) = sm.applied_state().await?;
    let committed = log.read_committed().await?;
    let start = applied.map_or(0, |l| l.index + 1);
    let end = committed.map_or(0, |l| l.index + 1);
    if start < end {
        let entries = log.try_get_log_entries(start..end).await?;
        sm.apply_entries(entries).await?;
    }
    Ok(())
}
