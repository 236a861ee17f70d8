//! The sled stores keep what they promise across a restart: log, vote,
//! committed id, purge point and snapshots; the state machine comes back at
//! its snapshot and replaying the log after it rebuilds the rest; corrupt
//! bytes are errors, not panics.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::testing::log_id;
use openraft::{
    Entry, EntryPayload, Membership, RaftLogReader, RaftSnapshotBuilder, SnapshotMeta, Vote,
};
use raftlock_storage::state::{LockState, StateParts};
use raftlock_storage::{
    open, slot, Applied, ClientSeq, Command, EndReason, Error, Event, LogStore, Mode, NodeAddr,
    Proposal, Request, Response, StateMachineStore, TypeConfig,
};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use uuid::Uuid;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn open_dir(
    dir: &Path,
) -> Result<(LogStore, StateMachineStore, UnboundedReceiver<Applied>), Error> {
    let (tx, rx) = unbounded_channel();
    let (log, sm) = open(dir, tx)?;
    Ok((log, sm, rx))
}

/// [`open_dir`], waiting for sled's flusher thread to let go of the
/// directory's lock after the last handle was dropped.
fn open_dir_when_free(
    dir: &Path,
) -> Result<(LogStore, StateMachineStore, UnboundedReceiver<Applied>), Error> {
    for _ in 0..100 {
        match open_dir(dir) {
            Err(Error::Sled(sled::Error::Io(e))) if e.to_string().contains("lock") => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
    open_dir(dir)
}

fn normal(index: u64, command: Command) -> Entry<TypeConfig> {
    let origin = Some(ClientSeq {
        client: client_id(),
        seq: index,
        acked_below: 0,
    });
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Normal(Proposal::from(Request {
            origin,
            time_ms: 1000,
            command,
        })),
    }
}

fn client_id() -> Uuid {
    Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef)
}

fn blank(index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Blank,
    }
}

fn membership(index: u64) -> Entry<TypeConfig> {
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
    let config = Membership::new(vec![BTreeSet::from([1, 2])], nodes);
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Membership(config),
    }
}

fn acquire(name: &str, owner: &str, lease: u64) -> Command {
    Command::Acquire {
        name: name.into(),
        owner: owner.into(),
        lease,
        mode: Mode::Exclusive,
        wait: true,
        value: None,
    }
}

fn parts(sm: &StateMachineStore) -> StateParts {
    sm.state().read().map(|s| s.to_parts()).unwrap_or_default()
}

/// The names of the database's trees, read straight from sled (stores
/// closed).
fn tree_names(dir: &Path) -> Result<Vec<Vec<u8>>, sled::Error> {
    // sled's flusher thread can hold the file lock a moment after the last
    // handle is dropped.
    let mut tries = 0;
    let db = loop {
        match sled::open(dir) {
            Err(sled::Error::Io(e)) if e.to_string().contains("lock") && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other?,
        }
    };
    Ok(db.tree_names().iter().map(|n| n.to_vec()).collect())
}

/// What openraft does at start-up: re-apply the committed entries after the
/// state machine's last applied one.
async fn replay_committed(log: &mut LogStore, sm: &mut StateMachineStore) -> TestResult {
    let (applied, _) = sm.applied_state().await?;
    let committed = log.read_committed().await?;
    let start = applied.map_or(0, |l| l.index + 1);
    let end = committed.map_or(0, |l| l.index + 1);
    if start < end {
        let entries = log.try_get_log_entries(start..end).await?;
        sm.apply(entries).await?;
    }
    Ok(())
}

#[tokio::test]
async fn restart_keeps_the_log_and_vote_and_replay_rebuilds_the_state() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (before, last_applied, members) = {
        let (mut log, mut sm, _rx) = open_dir(dir.path())?;
        let mut entries = vec![
            blank(1),
            membership(2),
            normal(3, Command::GrantLease { ttl_ms: 5_000 }),
            normal(4, acquire("a", "owner-1", slot(3, 0))),
        ];
        log.blocking_append(entries.clone()).await?;
        log.save_vote(&Vote::new_committed(1, 1)).await?;
        log.save_committed(Some(log_id(1, 1, 4))).await?;
        // A snapshot after entry 3; entry 4 is applied after it, so on disk
        // it is only in the log.
        let last = entries.split_off(3);
        let mut responses = sm.apply(entries).await?;
        sm.get_snapshot_builder().await.build_snapshot().await?;
        responses.extend(sm.apply(last).await?);
        // Blank and membership entries answer nothing; a proposal answers
        // once per request, and ids and fences are the requests' slots.
        assert_eq!(responses[0], vec![]);
        assert_eq!(responses[1], vec![]);
        assert_eq!(
            responses[2],
            vec![Response::LeaseGranted {
                id: slot(3, 0),
                ttl_ms: 5_000
            }]
        );
        assert_eq!(
            responses[3],
            vec![Response::Granted {
                fence: slot(4, 0),
                count: 1
            }]
        );
        let (applied, members) = sm.applied_state().await?;
        (parts(&sm), applied, members)
    };

    let (mut log, mut sm, _rx) = open_dir(dir.path())?;
    let state = log.get_log_state().await?;
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 4)));
    assert_eq!(state.last_purged_log_id, None);
    let entries = log.try_get_log_entries(1..5).await?;
    assert_eq!(
        entries.iter().map(|e| e.log_id.index).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(
        entries[3].payload,
        normal(4, acquire("a", "owner-1", slot(3, 0))).payload
    );
    assert_eq!(log.read_vote().await?, Some(Vote::new_committed(1, 1)));
    assert_eq!(log.read_committed().await?, Some(log_id(1, 1, 4)));

    // The state machine comes back at its snapshot...
    let (applied, reopened_members) = sm.applied_state().await?;
    assert_eq!(applied, Some(log_id(1, 1, 3)));
    assert_eq!(reopened_members, members);
    assert!(parts(&sm).locks.is_empty());
    // ...and re-applying the committed entry after it rebuilds the rest.
    replay_committed(&mut log, &mut sm).await?;
    let (applied, reopened_members) = sm.applied_state().await?;
    assert_eq!(applied, last_applied);
    assert_eq!(applied, Some(log_id(1, 1, 4)));
    assert_eq!(reopened_members, members);
    assert_eq!(reopened_members.log_id(), &Some(log_id(1, 1, 2)));
    assert_eq!(parts(&sm), before);
    assert!(sm
        .state()
        .read()
        .map(|s| s.check("a", slot(4, 0)))
        .unwrap_or(false));
    Ok(())
}

#[tokio::test]
async fn purge_and_truncate_keep_log_state_right() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=10).map(blank)).await?;
        log.truncate(log_id(1, 1, 9)).await?;
        let state = log.get_log_state().await?;
        assert_eq!(state.last_log_id, Some(log_id(1, 1, 8)));

        log.purge(log_id(1, 1, 5)).await?;
        let state = log.get_log_state().await?;
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 5)));
        assert_eq!(state.last_log_id, Some(log_id(1, 1, 8)));
        let left = log.try_get_log_entries(0..100).await?;
        assert_eq!(
            left.iter().map(|e| e.log_id.index).collect::<Vec<_>>(),
            vec![6, 7, 8]
        );

        // Purging everything: the purge point becomes the last log id.
        log.purge(log_id(1, 1, 8)).await?;
        let state = log.get_log_state().await?;
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 8)));
        assert_eq!(state.last_log_id, Some(log_id(1, 1, 8)));
        assert!(log.try_get_log_entries(..).await?.is_empty());
    }
    let (mut log, _sm, _rx) = open_dir(dir.path())?;
    let state = log.get_log_state().await?;
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 8)));
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 8)));
    Ok(())
}

#[tokio::test]
async fn snapshot_round_trip_into_a_fresh_store() -> TestResult {
    let source_dir = tempfile::tempdir()?;
    let (_log, mut source, _rx) = open_dir(source_dir.path())?;
    source
        .apply(vec![
            membership(1),
            normal(2, Command::GrantLease { ttl_ms: 5_000 }),
            normal(3, acquire("a", "owner-1", slot(2, 0))),
            normal(4, acquire("a", "owner-2", slot(2, 0))),
        ])
        .await?;
    let snapshot = source.get_snapshot_builder().await.build_snapshot().await?;
    assert_eq!(snapshot.meta.last_log_id, Some(log_id(1, 1, 4)));
    assert!(
        snapshot.meta.snapshot_id.starts_with("1-4-"),
        "{}",
        snapshot.meta.snapshot_id
    );
    let current = source
        .get_current_snapshot()
        .await?
        .ok_or("no current snapshot")?;
    assert_eq!(current.meta, snapshot.meta);
    assert_eq!(current.snapshot.get_ref(), snapshot.snapshot.get_ref());

    let target_dir = tempfile::tempdir()?;
    {
        let (_log, mut target, mut rx) = open_dir(target_dir.path())?;
        let mut received = target.begin_receiving_snapshot().await?;
        assert!(received.get_ref().is_empty());
        received
            .get_mut()
            .extend_from_slice(snapshot.snapshot.get_ref());
        target.install_snapshot(&snapshot.meta, received).await?;
        assert_eq!(rx.try_recv()?, Applied::Snapshot { index: 4 });
        assert_eq!(parts(&target), parts(&source));
        assert_eq!(target.applied_state().await?, source.applied_state().await?);
        let current = target
            .get_current_snapshot()
            .await?
            .ok_or("no current snapshot")?;
        assert_eq!(current.meta, snapshot.meta);
    }
    // The installed state is on disk, not only in memory.
    let (_log, target, _rx) = open_dir(target_dir.path())?;
    assert_eq!(parts(&target), parts(&source));
    let rebuilt = LockState::from_parts(parts(&target));
    assert_eq!(source.state().read().map(|s| s.clone()).ok(), Some(rebuilt));
    Ok(())
}

#[tokio::test]
async fn installing_a_snapshot_replaces_old_records() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    sm.apply(vec![
        normal(1, Command::GrantLease { ttl_ms: 5_000 }),
        normal(2, acquire("old", "o", slot(1, 0))),
    ])
    .await?;
    // An empty state at a later position, as a leader would send.
    let meta = SnapshotMeta {
        last_log_id: Some(log_id(2, 1, 10)),
        last_membership: Default::default(),
        snapshot_id: "2-10-1".into(),
    };
    let data = serde_json::to_vec(&serde_json::json!({
        "last_applied": log_id(2, 1, 10),
        "membership": openraft::StoredMembership::<u64, NodeAddr>::default(),
        "state": StateParts::default(),
    }))?;
    sm.install_snapshot(&meta, Box::new(Cursor::new(data)))
        .await?;
    assert_eq!(parts(&sm), StateParts::default());
    drop((_log, sm));
    let (_log, mut sm, _rx) = open_dir_when_free(dir.path())?;
    assert_eq!(parts(&sm), StateParts::default());
    assert_eq!(sm.applied_state().await?.0, Some(log_id(2, 1, 10)));
    Ok(())
}

#[tokio::test]
async fn apply_reports_events_per_entry_and_writes_nothing_to_disk() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (_log, mut sm, mut rx) = open_dir(dir.path())?;
        sm.apply(vec![
            normal(1, Command::GrantLease { ttl_ms: 5_000 }),
            normal(2, Command::GrantLease { ttl_ms: 5_000 }),
            normal(3, acquire("a", "owner-1", slot(1, 0))),
        ])
        .await?;
        // Events arrive per entry, in log order.
        let mut indexes = Vec::new();
        while let Ok(Applied::Entry { index, events }) = rx.try_recv() {
            assert!(!events.is_empty());
            indexes.push(index);
        }
        assert_eq!(indexes, vec![1, 2, 3]);
        // Revoking lease 1 releases "a": the lock record and the lease go.
        sm.apply(vec![normal(4, Command::RevokeLease { id: slot(1, 0) })])
            .await?;
        match rx.try_recv()? {
            Applied::Entry { index: 4, events } => {
                assert!(events.contains(&Event::LeaseEnded {
                    id: slot(1, 0),
                    reason: EndReason::LeaseRevoked
                }))
            }
            other => return Err(format!("unexpected {other:?}").into()),
        }
        let state = parts(&sm);
        assert_eq!(state.leases.len(), 1);
        assert!(state.locks.is_empty());
    }
    // No state-machine tree: without a snapshot the state lives in the log.
    let mut trees = tree_names(dir.path())?;
    trees.sort();
    assert_eq!(
        trees,
        vec![
            b"__sled__default".to_vec(),
            b"log".to_vec(),
            b"raft_meta".to_vec(),
            b"snapshot".to_vec()
        ]
    );
    let (_log, mut sm, _rx) = open_dir_when_free(dir.path())?;
    assert_eq!(parts(&sm), StateParts::default());
    assert_eq!(sm.applied_state().await?.0, None);
    Ok(())
}

#[tokio::test]
async fn corrupt_bytes_are_errors_not_panics() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, mut sm, _rx) = open_dir(dir.path())?;
        log.blocking_append(vec![blank(1)]).await?;
        // A received snapshot that is not one.
        let meta = SnapshotMeta {
            last_log_id: Some(log_id(1, 1, 1)),
            last_membership: Default::default(),
            snapshot_id: "x".into(),
        };
        let garbage = Box::new(Cursor::new(b"not json".to_vec()));
        assert!(sm.install_snapshot(&meta, garbage).await.is_err());
        assert!(sm.get_current_snapshot().await?.is_none());
    }
    {
        let db = sled::open(dir.path())?;
        db.open_tree("log")?
            .insert(2u64.to_be_bytes(), b"{broken".to_vec())?;
        db.flush()?;
    }
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        assert!(log.try_get_log_entries(..).await.is_err());
        assert!(log.get_log_state().await.is_err());
    }
    {
        let db = sled::open(dir.path())?;
        let snapshots = db.open_tree("snapshot")?;
        let meta = SnapshotMeta::<u64, NodeAddr> {
            last_log_id: Some(log_id(1, 1, 1)),
            last_membership: Default::default(),
            snapshot_id: "1-1-1".into(),
        };
        snapshots.insert(b"meta", serde_json::to_vec(&meta)?)?;
        snapshots.insert(b"data", b"{broken".to_vec())?;
        db.flush()?;
    }
    match open_dir(dir.path()) {
        Err(Error::Decode { .. }) => Ok(()),
        Err(e) => Err(format!("unexpected error {e}").into()),
        Ok(_) => Err("opened a store with a corrupt snapshot".into()),
    }
}

#[tokio::test]
async fn a_directory_with_per_record_state_from_an_earlier_build_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = sled::open(dir.path())?;
        db.open_tree("sm")?
            .insert(b"m/last_applied", b"null".to_vec())?;
        db.flush()?;
    }
    match open_dir(dir.path()) {
        Err(Error::Corrupt(message)) => {
            assert!(message.contains("earlier raftlock build"), "{message}");
            Ok(())
        }
        Err(e) => Err(format!("unexpected error {e}").into()),
        Ok(_) => Err("opened a directory with per-record state".into()),
    }
}

#[tokio::test]
async fn requests_sharing_an_entry_get_their_own_increasing_slots() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    let request = |command| Request {
        origin: None,
        time_ms: 1000,
        command,
    };
    let release = |owner: &str| Command::Release {
        name: "a".into(),
        owner: owner.into(),
    };
    let entry = Entry {
        log_id: log_id(1, 1, 7),
        payload: EntryPayload::Normal(Proposal {
            requests: vec![
                request(Command::GrantLease { ttl_ms: 5_000 }),
                request(Command::GrantLease { ttl_ms: 5_000 }),
                request(acquire("a", "owner-1", slot(7, 0))),
                request(release("owner-1")),
                request(acquire("a", "owner-2", slot(7, 1))),
            ],
        }),
    };
    let responses = sm.apply(vec![entry]).await?;
    assert_eq!(
        responses,
        vec![vec![
            Response::LeaseGranted {
                id: slot(7, 0),
                ttl_ms: 5_000
            },
            Response::LeaseGranted {
                id: slot(7, 1),
                ttl_ms: 5_000
            },
            Response::Granted {
                fence: slot(7, 2),
                count: 1
            },
            Response::Released { remaining: 0 },
            // The second grant of "a" in the same entry has a larger fence.
            Response::Granted {
                fence: slot(7, 4),
                count: 1
            },
        ]]
    );
    assert!(slot(7, 4) < slot(8, 0));
    Ok(())
}

#[tokio::test]
async fn a_large_expiry_is_applied_off_the_runtime_and_snapshotted() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    sm.apply(vec![
        normal(1, Command::GrantLease { ttl_ms: 5_000 }),
        normal(2, Command::GrantLease { ttl_ms: 5_000 }),
        normal(3, acquire("a", "owner-1", slot(1, 0))),
    ])
    .await?;
    // Enough ids to take the blocking-pool path; unknown ids are ignored.
    let mut ids: Vec<u64> = (1_000_000..1_003_000).collect();
    ids.push(slot(1, 0));
    let expire = Entry {
        log_id: log_id(1, 1, 4),
        payload: EntryPayload::Normal(Proposal::from(Request {
            origin: None,
            time_ms: 1000,
            command: Command::ExpireLeases { ids },
        })),
    };
    let responses = sm.apply(vec![expire]).await?;
    assert_eq!(
        responses,
        vec![vec![Response::LeasesExpired {
            ids: vec![slot(1, 0)]
        }]]
    );
    let after = parts(&sm);
    assert_eq!(after.leases.len(), 1);
    assert!(after.locks.is_empty());
    sm.get_snapshot_builder().await.build_snapshot().await?;
    drop((_log, sm));
    let (_log, sm, _rx) = open_dir_when_free(dir.path())?;
    assert_eq!(parts(&sm), after);
    Ok(())
}
