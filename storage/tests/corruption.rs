//! Damage to a stopped node's data dir: every file is flipped, truncated and
//! zeroed at several places, and each damaged copy must either open with
//! every acknowledged entry and the vote intact, or be refused with
//! [`Error::DataDir`]. Opening with less state than was acknowledged, or
//! failing with any other error, fails the test. (In this matrix sled's own
//! checks refuse every damaged `db` that is refused; the identity file's
//! floor, which catches a silently shortened log, is attacked in
//! `recovery.rs`.)

use raftlock_storage::command::GrantLease;
use std::path::{Path, PathBuf};

use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::RaftLogReader;
use raftlock_storage::{open, Bootstrap, Command, Error, OpenOptions};
use tokio::sync::mpsc::unbounded_channel;

mod common;
use common::*;

const ENTRIES: u64 = 60;

/// How a file is damaged.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Four bytes inverted at this fraction of the file.
    Flip(f64),
    /// Four bytes inverted at this byte offset (the report: 100).
    FlipAt(usize),
    /// Cut to this fraction of its length.
    Truncate(f64),
    /// 4 KiB of zeroes from this fraction of the file.
    Zero(f64),
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

fn damage(path: &Path, how: Damage) -> std::io::Result<bool> {
    let mut bytes = std::fs::read(path)?;
    if bytes.is_empty() {
        return Ok(false);
    }
    let at = |f: f64| ((bytes.len() as f64 * f) as usize).min(bytes.len() - 1);
    match how {
        Damage::Flip(f) => {
            let start = at(f);
            for b in bytes.iter_mut().skip(start).take(4) {
                *b = !*b;
            }
        }
        Damage::FlipAt(offset) => {
            for b in bytes.iter_mut().skip(offset).take(4) {
                *b = !*b;
            }
        }
        Damage::Truncate(f) => bytes.truncate(at(f)),
        Damage::Zero(f) => {
            let start = at(f);
            for b in bytes.iter_mut().skip(start).take(4096) {
                *b = 0;
            }
        }
    }
    std::fs::write(path, bytes)?;
    Ok(true)
}

/// What opening a damaged copy led to.
enum Outcome {
    Refused,
    Intact,
}

async fn check(dir: &Path) -> Result<Outcome, String> {
    let (tx, _rx) = unbounded_channel();
    let options = OpenOptions::new(1, Bootstrap::SingleNode);
    // Copies are fresh dirs: no other handle can hold sled's lock here.
    let (mut log, _sm) = match open(dir, &options, tx) {
        Err(Error::DataDir { problem, .. }) => {
            eprintln!("refused: {problem}");
            return Ok(Outcome::Refused);
        }
        Err(e) => return Err(format!("refused without naming the dir's problem: {e}")),
        Ok(stores) => stores,
    };
    let vote = log.read_vote().await.map_err(|e| e.to_string())?;
    if vote != Some(Vote::new_committed(3, 1)) {
        return Err(format!("opened with vote {vote:?}"));
    }
    let entries = log
        .try_get_log_entries(1..=ENTRIES)
        .await
        .map_err(|e| format!("opened, then a read failed: {e}"))?;
    let indexes: Vec<u64> = entries.iter().map(|e| e.log_id.index).collect();
    if indexes != (1..=ENTRIES).collect::<Vec<_>>() {
        return Err(format!("opened with entries {indexes:?}"));
    }
    Ok(Outcome::Intact)
}

#[tokio::test]
async fn damaged_files_are_refused_or_recovered_exactly() -> TestResult {
    let pristine = tempfile::tempdir()?;
    {
        let (mut log, _sm, _rx) = open_dir(pristine.path())?;
        log.save_vote(&Vote::new_committed(3, 1)).await?;
        for index in 1..=ENTRIES {
            log.blocking_append(vec![normal(
                index,
                Command::GrantLease(GrantLease { ttl_ms: 60_000 }),
            )])
            .await?;
        }
        log.save_committed(Some(log_id(3, 1, ENTRIES))).await?;
        log.close().await?;
    }
    {
        // A second open writes sled's `snap.*` file; close again.
        let (log, _sm, _rx) = open_dir(pristine.path())?;
        log.close().await?;
    }
    let scratch = tempfile::tempdir()?;
    let mut cases = 0;
    let mut refused = 0;
    let mut failures = Vec::new();
    for file in files(pristine.path()) {
        let relative = file.strip_prefix(pristine.path())?.to_path_buf();
        for how in [
            Damage::Flip(0.0),
            Damage::FlipAt(100),
            Damage::FlipAt(600),
            Damage::FlipAt(4200),
            Damage::Flip(0.02),
            Damage::Flip(0.3),
            Damage::Flip(0.6),
            Damage::Flip(0.95),
            Damage::Truncate(0.0),
            Damage::Truncate(0.5),
            Damage::Truncate(0.9),
            Damage::Zero(0.0),
            Damage::Zero(0.5),
        ] {
            let copy = scratch.path().join(format!("case{cases}"));
            copy_dir(pristine.path(), &copy)?;
            if !damage(&copy.join(&relative), how)? {
                continue;
            }
            cases += 1;
            match check(&copy).await {
                Ok(Outcome::Refused) => refused += 1,
                Ok(Outcome::Intact) => {}
                Err(e) => failures.push(format!("{} {how:?}: {e}", relative.display())),
            }
            std::fs::remove_dir_all(&copy)?;
        }
    }
    eprintln!(
        "{cases} damaged copies: {refused} refused, {} opened intact, {} wrong",
        cases - refused - failures.len(),
        failures.len()
    );
    assert!(cases > 20, "only {cases} cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
