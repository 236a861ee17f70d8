//! The stores keep what they promise across a restart: log, vote,
//! committed id and purge point; the state machine comes back at its
//! snapshot and replaying the log after it rebuilds the rest; corrupt bytes
//! and directories of earlier builds are errors, not panics.

use raftlock_storage::command::GrantLease;
use std::io::Cursor;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{RaftLogReader, RaftSnapshotBuilder};
use raftlock_storage::{slot, Command, Error, Response};

mod common;
use common::*;

#[tokio::test]
async fn restart_keeps_the_log_and_vote_and_replay_rebuilds_the_state() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (before, last_applied, members) = {
        let (mut log, mut sm, _rx) = open_dir(dir.path())?;
        let mut entries = vec![
            blank(1),
            membership(2),
            normal(3, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
            normal(4, acquire("a", "owner-1", slot(3, 0))),
        ];
        log.blocking_append(entries.clone()).await?;
        log.save_vote(&Vote::new_committed(1, 1)).await?;
        log.save_committed(Some(log_id(1, 1, 4))).await?;
        // A snapshot after entry 3; entry 4 is applied after it, so on disk
        // it is only in the log.
        let last = entries.split_off(3);
        let mut responses = sm.apply_entries(entries).await?;
        sm.get_snapshot_builder().await.build_snapshot().await?;
        responses.extend(sm.apply_entries(last).await?);
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
        let (mut log, mut sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=10).map(blank)).await?;
        log.truncate_after(Some(log_id(1, 1, 8))).await?;
        let state = log.get_log_state().await?;
        assert_eq!(state.last_log_id, Some(log_id(1, 1, 8)));

        // openraft purges only what a snapshot covers.
        sm.apply_entries((1..=8).map(blank).collect()).await?;
        sm.get_snapshot_builder().await.build_snapshot().await?;
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

/// Opening `dir` must be refused with a [`Error::DataDir`] whose problem
/// mentions `needle`.
fn assert_refused(dir: &std::path::Path, needle: &str) -> TestResult {
    match open_dir(dir) {
        Err(Error::DataDir { problem, .. }) if problem.contains(needle) => Ok(()),
        Err(e) => Err(format!("expected a refusal mentioning {needle:?}, got: {e}").into()),
        Ok(_) => Err(format!("opened a dir that should be refused ({needle})").into()),
    }
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
        };
        let garbage = Cursor::new(b"not json".to_vec());
        assert!(sm.install_snapshot(&meta, garbage).await.is_err());
        assert!(sm.get_current_snapshot().await?.is_none());
    }
    let segment = entry_frame(dir.path(), 1)?.path;
    let whole = std::fs::read(&segment)?;
    let mut broken = whole.clone();
    broken.extend_from_slice(b"{broken record}");
    std::fs::write(&segment, broken)?;
    assert_refused(dir.path(), "a record length of")?;
    std::fs::write(&segment, whole)?;
    {
        let db = open_sled(dir.path())?;
        let snapshots = db.open_tree("snapshot")?;
        snapshots.insert(b"meta", b"{broken".to_vec())?;
        snapshots.insert(b"data", b"{broken".to_vec())?;
        db.flush()?;
    }
    assert_refused(dir.path(), "snapshot meta")
}

#[tokio::test]
async fn a_flipped_bit_in_a_log_entry_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append(
            (1..=4).map(|i| normal(i, Command::GrantLease(GrantLease { ttl_ms: 1_000 }))),
        )
        .await?;
    }
    let frame = entry_frame(dir.path(), 3)?;
    let mut bytes = std::fs::read(&frame.path)?;
    bytes[frame.offset + frame.len - 1] ^= 0x10;
    std::fs::write(&frame.path, bytes)?;
    assert_refused(dir.path(), "checksum mismatch")
}

#[tokio::test]
async fn a_directory_with_per_record_state_from_an_earlier_build_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = open_sled(dir.path())?;
        db.open_tree("sm")?
            .insert(b"m/last_applied", b"null".to_vec())?;
        db.flush()?;
    }
    assert_refused(dir.path(), "earlier raftlock build")
}

/// Without the check that each entry follows the one before
/// (`LogState::check_next`, run on replay), the store opens and serves a
/// log with entries missing in the middle.
#[tokio::test]
async fn a_gap_in_the_log_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=10).map(blank)).await?;
    }
    // Entry 5 lost, 6..=10 kept: not what a crash leaves (a prefix).
    lose_log_entry(dir.path(), 5)?;
    assert_refused(dir.path(), "entry 6 does not follow the log's last index 4")
}

#[tokio::test]
async fn a_gap_right_after_the_purge_point_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, mut sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=6).map(blank)).await?;
        sm.apply_entries((1..=3).map(blank).collect()).await?;
        sm.get_snapshot_builder().await.build_snapshot().await?;
        log.purge(log_id(1, 1, 3)).await?;
    }
    lose_log_entry(dir.path(), 4)?;
    assert_refused(dir.path(), "entry 5 does not follow the log's last index 3")
}
