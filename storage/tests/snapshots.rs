//! Snapshots: built, stored, installed into another store, and reloaded
//! after a restart.

use std::collections::BTreeMap;
use std::io::Cursor;

use openraft::storage::RaftStateMachine;
use openraft::RaftSnapshotBuilder;
use raftlock_storage::command::{ExpireLeases, GrantLease};
use raftlock_storage::state::{LockState, StateParts};
use raftlock_storage::{
    slot, Applied, Command, NodeAddr, Proposal, Request, Response, SnapshotMeta, StoredMembership,
};

mod common;
use common::*;

#[tokio::test]
async fn snapshot_round_trip_into_a_fresh_store() -> TestResult {
    let source_dir = tempfile::tempdir()?;
    let (_log, mut source, _rx) = open_dir(source_dir.path())?;
    source
        .apply_entries(vec![
            membership(1),
            normal(2, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
            normal(3, acquire("a", "owner-1", slot(2, 0))),
            normal(4, acquire("a", "owner-2", slot(2, 0))),
        ])
        .await?;
    let snapshot = source.get_snapshot_builder().await.build_snapshot().await?;
    assert_eq!(snapshot.meta.last_log_id, Some(log_id(1, 1, 4)));
    // Checked postcard after its marker byte (earlier builds wrote JSON,
    // still read: see installing_a_snapshot_replaces_old_records).
    assert_eq!(snapshot.snapshot.get_ref().first(), Some(&0xB5));
    let current = source
        .get_current_snapshot()
        .await?
        .ok_or("no current snapshot")?;
    assert_eq!(current.meta, snapshot.meta);
    assert_eq!(current.snapshot.get_ref(), snapshot.snapshot.get_ref());

    let target_dir = tempfile::tempdir()?;
    {
        let (_log, mut target, mut rx) = open_dir(target_dir.path())?;
        let received = Cursor::new(snapshot.snapshot.get_ref().clone());
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
    sm.apply_entries(vec![
        normal(1, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
        normal(2, acquire("old", "o", slot(1, 0))),
    ])
    .await?;
    // An empty state at a later position, as a leader would send.
    let meta = SnapshotMeta {
        last_log_id: Some(log_id(2, 1, 10)),
        last_membership: Default::default(),
    };
    let data = serde_json::to_vec(&serde_json::json!({
        "last_applied": log_id(2, 1, 10),
        "membership": StoredMembership::default(),
        "state": StateParts::default(),
    }))?;
    sm.install_snapshot(&meta, Cursor::new(data)).await?;
    assert_eq!(parts(&sm), StateParts::default());
    drop((_log, sm));
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    assert_eq!(parts(&sm), StateParts::default());
    assert_eq!(sm.applied_state().await?.0, Some(log_id(2, 1, 10)));
    Ok(())
}

#[tokio::test]
async fn a_large_expiry_is_applied_off_the_runtime_and_snapshotted() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    sm.apply_entries(vec![
        normal(1, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
        normal(2, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
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
            caller: Default::default(),
            time_ms: 1000,
            command: Command::ExpireLeases(ExpireLeases { ids }),
        })),
    };
    let responses = sm.apply_entries(vec![expire]).await?;
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
    let (_log, sm, _rx) = open_dir(dir.path())?;
    assert_eq!(parts(&sm), after);
    Ok(())
}

/// A membership entry that drops a node records its id as retired, and
/// the record travels in snapshots (the leader refuses to add a retired
/// id again: `tests/it/membership.rs`).
#[tokio::test]
async fn a_removed_node_stays_retired_through_a_snapshot() -> TestResult {
    let source_dir = tempfile::tempdir()?;
    let (_log, mut source, _rx) = open_dir(source_dir.path())?;
    let mut only_one = membership(1);
    if let openraft::EntryPayload::Membership(m) = &membership(1).payload {
        let nodes = m.nodes().filter(|(id, _)| **id == 1);
        let nodes: BTreeMap<u64, NodeAddr> = nodes.map(|(id, n)| (*id, n.clone())).collect();
        let config = openraft::Membership::new(vec![[1].into()], nodes)?;
        only_one.log_id = log_id(1, 1, 2);
        only_one.payload = openraft::EntryPayload::Membership(config);
    }
    source.apply_entries(vec![membership(1), only_one]).await?;
    let retired = |sm: &raftlock_storage::StateMachineStore| {
        let state = sm.state();
        let state = state.read().map_err(|_| "poisoned")?;
        Ok::<_, &str>((state.is_retired(1), state.is_retired(2)))
    };
    assert_eq!(retired(&source)?, (false, true));
    let snapshot = source.get_snapshot_builder().await.build_snapshot().await?;
    let target_dir = tempfile::tempdir()?;
    let (_log, mut target, _rx) = open_dir(target_dir.path())?;
    let received = Cursor::new(snapshot.snapshot.get_ref().clone());
    target.install_snapshot(&snapshot.meta, received).await?;
    assert_eq!(retired(&target)?, (false, true));
    Ok(())
}
