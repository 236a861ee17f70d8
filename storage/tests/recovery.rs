//! A data dir that lost state it acknowledged, or that belongs to another
//! node or cluster, is refused at open with a clear error; a healthy one
//! opens. Each test damages a dir the way the disk, a power loss or an
//! operator could, and fails if the store opens anyway.

use std::path::Path;
use std::time::Duration;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use raftlock_storage::identity::FLOOR_INTERVAL;
use raftlock_storage::{open, Bootstrap, Error, Identity, OpenOptions, IDENTITY_FILE};
use tokio::sync::mpsc::unbounded_channel;

mod common;
use common::*;

/// Opens `dir` as `options` say. Retries while sled's directory lock is
/// still held by a handle dropped a moment ago (sled's flusher thread lets
/// go of it late; see `common::open_dir`).
fn open_as(dir: &Path, options: &OpenOptions) -> Result<(), Error> {
    for _ in 0..100 {
        let (tx, _rx) = unbounded_channel();
        match open(dir, options, tx) {
            Err(Error::Sled(_)) => std::thread::sleep(Duration::from_millis(20)),
            other => return other.map(drop),
        }
    }
    let (tx, _rx) = unbounded_channel();
    open(dir, options, tx).map(drop)
}

fn refused(result: Result<(), Error>, needle: &str) -> TestResult {
    match result {
        Err(Error::DataDir {
            problem, action, ..
        }) if problem.contains(needle) => {
            assert!(action.contains("add-learner"), "no recovery step: {action}");
            Ok(())
        }
        Err(e) => Err(format!("expected a refusal mentioning {needle:?}, got: {e}").into()),
        Ok(()) => Err(format!("opened a dir that should be refused ({needle})").into()),
    }
}

fn cluster(members: &str) -> Bootstrap {
    Bootstrap::Cluster {
        members: members.into(),
    }
}

/// Removes every file sled keeps, leaving the identity file: what a
/// replaced disk or a reset sled leaves behind.
fn wipe_sled(dir: &Path) -> TestResult {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n == IDENTITY_FILE) {
            continue;
        }
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

#[test]
fn a_new_dir_records_its_node_and_cluster() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = OpenOptions::new(2, cluster("1=a/b,2=c/d"));
    open_as(dir.path(), &options)?;
    let identity = Identity::read(dir.path())?.ok_or("no identity file")?;
    assert_eq!(identity.node_id, 2);
    assert_eq!(identity.bootstrap, cluster("1=a/b,2=c/d"));
    // The same flags, or none, open it again.
    open_as(dir.path(), &options)?;
    open_as(dir.path(), &OpenOptions::new(2, Bootstrap::SingleNode))?;
    Ok(())
}

#[test]
fn another_node_id_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode))?;
    refused(
        open_as(dir.path(), &OpenOptions::new(3, Bootstrap::SingleNode)),
        "belongs to node 1, but this node was started as node 3",
    )
}

/// The case from the issue: a dir of one cluster started with another
/// `--initial-cluster` used to ignore the flag and claim the old cluster.
#[test]
fn another_initial_cluster_or_join_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    open_as(dir.path(), &OpenOptions::new(1, cluster("1=a/b,2=c/d")))?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, cluster("1=a/b,2=x/y"))),
        "created for --initial-cluster 1=a/b,2=c/d",
    )?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::Join)),
        "started with --join",
    )
}

#[tokio::test]
async fn state_without_an_identity_file_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=3).map(blank)).await?;
    }
    std::fs::remove_file(dir.path().join(IDENTITY_FILE))?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode)),
        "holds Raft state (last log index 3) but no raftlock.identity",
    )
}

/// Without the floor, a dir whose sled files were lost opens as a new
/// empty node, and a one-node cluster initializes itself again.
#[tokio::test]
async fn a_dir_that_lost_its_vote_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.save_vote(&Vote::new(4, 1)).await?;
    }
    wipe_sled(dir.path())?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode)),
        "this node voted in term 4",
    )
}

#[tokio::test]
async fn a_log_shorter_than_at_a_clean_shutdown_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=10).map(blank)).await?;
        log.close().await?;
    }
    // The last entries gone, as when a damaged tail is cut: a prefix, so
    // the log itself looks whole.
    cut_log_at_entry(dir.path(), 8)?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode)),
        "it ended at 10 when the node last stopped cleanly",
    )
}

#[tokio::test]
async fn a_log_that_lost_committed_entries_after_a_crash_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=5).map(blank)).await?;
        log.save_committed(Some(log_id(1, 1, 5))).await?;
        // The floor is raised at most once a FLOOR_INTERVAL, on a sync.
        tokio::time::sleep(FLOOR_INTERVAL + Duration::from_millis(100)).await;
        log.blocking_append(vec![blank(6)]).await?;
        // No close(): a crash.
    }
    let floor = Identity::read(dir.path())?.ok_or("no identity")?.floor;
    assert_eq!(floor.committed, 5, "{floor:?}");
    // The log's committed records after entry 4 go with the entries.
    cut_log_at_entry(dir.path(), 4)?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode)),
        "index 5 was committed and stored here",
    )
}

#[tokio::test]
async fn a_committed_index_beyond_the_log_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=5).map(blank)).await?;
        log.save_committed(Some(log_id(1, 1, 5))).await?;
        log.flush().await?;
    }
    lose_log_entry(dir.path(), 5)?;
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode)),
        "the log ends at index 4 below the committed index 5",
    )
}

#[tokio::test]
async fn a_purged_log_without_its_snapshot_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(dir.path())?;
        log.blocking_append((1..=5).map(blank)).await?;
        log.purge(log_id(1, 1, 3)).await?;
    }
    refused(
        open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode)),
        "purged up to index 3 but there is no snapshot",
    )
}

#[test]
fn a_damaged_identity_file_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    open_as(dir.path(), &OpenOptions::new(1, Bootstrap::SingleNode))?;
    let path = dir.path().join(IDENTITY_FILE);
    let text = std::fs::read_to_string(&path)?.replace("\"node_id\": 1", "\"node_id\": 7");
    std::fs::write(&path, text)?;
    refused(
        open_as(dir.path(), &OpenOptions::new(7, Bootstrap::SingleNode)),
        "checksum mismatch",
    )
}
