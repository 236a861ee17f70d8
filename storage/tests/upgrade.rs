//! A data dir of record format 6 with its Raft log in sled (the layout
//! before the write-ahead log) opens and moves its log across; an upgrade
//! interrupted at either step finishes on the next open; a damaged old log
//! is refused and left as it was.
//!
//! `fixtures/format6-dir.tar.gz` is a real dir of that layout, made by the
//! release build of commit 86f48c6 (see `fixtures/README.md`): a one-node
//! cluster that granted three leases and took and released twelve locks,
//! with a snapshot every 10 entries, stopped cleanly with its log at 52.

use std::path::{Path, PathBuf};

use openraft::storage::RaftLogStorage;
use openraft::RaftLogReader;
use raftlock_storage::log_store::upgrade::UPGRADING_DIR;
use raftlock_storage::log_store::WAL_DIR;
use raftlock_storage::Error;

mod common;
use common::*;

/// The fixture's log end, vote term and leases.
const LAST_LOG: u64 = 52;
const LEASES: usize = 3;

/// Unpacks the fixture into a new temporary dir; returns it and the data
/// dir inside it.
fn format6_dir() -> Result<(tempfile::TempDir, PathBuf), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format6-dir.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&fixture)
        .arg("-C")
        .arg(tmp.path())
        .status()?;
    assert!(status.success(), "tar failed on {}", fixture.display());
    let data = tmp.path().join("data");
    Ok((tmp, data))
}

/// Opens `dir` and checks it holds the fixture's state: the log up to
/// [`LAST_LOG`], the vote, and the leases once the log is replayed.
async fn check_state(dir: &Path) -> TestResult {
    let (mut log, mut sm, _rx) = open_dir(dir)?;
    let state = log.get_log_state().await?;
    assert_eq!(state.last_log_id.map(|l| l.index), Some(LAST_LOG));
    let from = state.last_purged_log_id.map_or(0, |p| p.index + 1);
    let entries = log.try_get_log_entries(from..=LAST_LOG).await?;
    assert_eq!(entries.len() as u64, LAST_LOG + 1 - from);
    assert_eq!(log.read_vote().await?.map(|v| v.leader_id().term), Some(1));
    assert!(log.read_committed().await?.is_some());
    replay_committed(&mut log, &mut sm).await?;
    assert_eq!(parts(&sm).leases.len(), LEASES);
    log.close().await?;
    Ok(())
}

/// The log trees are gone from sled and the log is in `wal/`.
fn check_moved(dir: &Path) -> TestResult {
    let trees = tree_names(dir)?;
    assert!(
        !trees.iter().any(|t| t == b"log" || t == b"raft_meta"),
        "sled still has the log trees: {trees:?}"
    );
    assert!(dir.join(WAL_DIR).is_dir());
    assert!(!dir.join(UPGRADING_DIR).exists());
    Ok(())
}

/// Without the move (`log_store::upgrade`), the dir opens with an empty
/// log and is refused for the vote and entries its identity file says it
/// held.
#[tokio::test]
async fn a_format_6_dir_opens_and_moves_its_log_across() -> TestResult {
    let (_tmp, dir) = format6_dir()?;
    check_state(&dir).await?;
    check_moved(&dir)?;
    // And opens again as a dir of this layout.
    check_state(&dir).await
}

/// An upgrade interrupted while it wrote `wal.upgrading/` (sled's trees
/// still whole) starts again. Without removing the leftover, the new
/// attempt cannot create its first segment and the dir is refused.
#[tokio::test]
async fn an_upgrade_interrupted_before_the_rename_starts_again() -> TestResult {
    let (_tmp, dir) = format6_dir()?;
    let upgrading = dir.join(UPGRADING_DIR);
    std::fs::create_dir(&upgrading)?;
    std::fs::write(
        upgrading.join("00000000000000000001.wal"),
        b"half a segment",
    )?;
    check_state(&dir).await?;
    check_moved(&dir)
}

/// An upgrade interrupted after the rename (`wal/` in place, sled's trees
/// not yet dropped) finishes: the trees are dropped and the log in `wal/`
/// is used. Without it sled keeps the old trees for ever.
#[tokio::test]
async fn an_upgrade_interrupted_after_the_rename_finishes() -> TestResult {
    let (_done, upgraded) = format6_dir()?;
    check_state(&upgraded).await?;
    let (_tmp, dir) = format6_dir()?;
    std::fs::create_dir(dir.join(WAL_DIR))?;
    for entry in std::fs::read_dir(upgraded.join(WAL_DIR))? {
        let entry = entry?;
        std::fs::copy(entry.path(), dir.join(WAL_DIR).join(entry.file_name()))?;
    }
    assert!(tree_names(&dir)?.iter().any(|t| t == b"log"));
    check_state(&dir).await?;
    check_moved(&dir)
}

/// An old log with an entry missing is refused, naming the move, and the
/// dir is left as it was: sled's trees whole, no `wal/`.
#[tokio::test]
async fn a_damaged_format_6_log_is_refused_and_left_as_it_was() -> TestResult {
    let (_tmp, dir) = format6_dir()?;
    let entries = {
        let db = open_sled(&dir)?;
        let log = db.open_tree("log")?;
        let (key, _) = log.iter().nth(2).ok_or("the fixture's log is short")??;
        log.remove(key)?;
        db.flush()?;
        log.len()
    };
    match open_dir(&dir) {
        Err(Error::DataDir { problem, .. }) => {
            assert!(
                problem.contains("cannot move the Raft log out of sled"),
                "{problem}"
            );
            assert!(problem.contains("does not follow"), "{problem}");
        }
        Err(e) => return Err(format!("refused without naming the dir: {e}").into()),
        Ok(_) => return Err("a log with a gap was moved".into()),
    }
    assert!(!dir.join(WAL_DIR).exists());
    assert!(!dir.join(UPGRADING_DIR).exists());
    assert_eq!(open_sled(&dir)?.open_tree("log")?.len(), entries);
    Ok(())
}
