//! The cut of an aimed round (see `stage`): arm the cut point on one
//! victim's disk, wait for it to fire, and say which operation the power
//! went at. For `upgrade`, first put the victims' logs back into the
//! format-6 layout and restart them, so the cut lands inside the move.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::disk::DataDisk;
use super::stage::{Aim, FIRE_WITHIN};
use crate::cluster::Cluster;
use crate::Error;

/// How often the harness looks whether the point fired.
const POLL: Duration = Duration::from_millis(2);

/// Arms `aim` and waits until it fires (the victims must then be killed
/// at once: the disk holds every change until its cut). Answers whether it
/// fired and the line describing where.
pub async fn fire(disks: &BTreeMap<u64, DataDisk>, aim: &Aim) -> (bool, String) {
    let Some(disk) = disks.get(&aim.disk) else {
        return (
            false,
            format!("aim: {} on n{}: no such disk", aim.stage.label(), aim.disk),
        );
    };
    disk.arm(aim.point.clone());
    let deadline = Instant::now() + FIRE_WITHIN;
    while disk.fired().is_none() && Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
    }
    disk.disarm();
    match disk.fired() {
        Some(fired) => (
            true,
            format!(
                "aim: {} on n{}: power went {fired}",
                aim.stage.label(),
                aim.disk
            ),
        ),
        None => (
            false,
            format!(
                "aim: {} on n{}: NOT FIRED within {}s ({:?} #{} on {}, then {}); a timed cut",
                aim.stage.label(),
                aim.disk,
                FIRE_WITHIN.as_secs(),
                aim.point.op,
                aim.point.nth,
                aim.point.path,
                aim.point.then
            ),
        ),
    }
}

/// After the round's ordinary cut of `victims`: moves their logs back into
/// sled (the format-6 layout), restarts them so that they move the logs
/// across again, cuts inside that move as `aim` says, and kills them and
/// cuts their power again. Answers whether the point fired and the line.
pub async fn upgrade(
    cluster: &mut Cluster,
    disks: &BTreeMap<u64, DataDisk>,
    aim: &Aim,
    victims: &[u64],
) -> Result<(bool, String), Error> {
    let mut moved = Vec::new();
    for id in victims {
        let Some(disk) = disks.get(id) else { continue };
        let dir = disk.data_dir();
        let entries = tokio::task::spawn_blocking(move || to_format6(&dir))
            .await
            .map_err(|e| Error::Setup(format!("moving n{id}'s log into sled: {e}")))??;
        moved.push(format!("n{id} {entries}"));
    }
    for id in victims {
        cluster.start(*id)?;
    }
    let (fired, line) = fire(disks, aim).await;
    cluster.kill_many(victims).await?;
    for id in victims {
        if let Some(disk) = disks.get(id) {
            disk.cut_power()?;
        }
    }
    let line = format!(
        "{line}\n  upgrade: the victims' logs put back in sled (entries: {}), restarted, cut again",
        moved.join(", ")
    );
    Ok((fired, line))
}

/// Moves the log of data dir `dir` into sled's trees (test builds with
/// the format-6 writer; see `Stage::Upgrade`).
#[cfg(feature = "small-wal-segments")]
fn to_format6(dir: &std::path::Path) -> Result<usize, Error> {
    raftlock_storage::log_store::format6::move_into_sled(dir).map_err(|e| {
        Error::Setup(format!(
            "cannot put the log of {} into the format-6 layout: {e}",
            dir.display()
        ))
    })
}

/// Without the format-6 writer: refused (`run` refuses the stage first).
#[cfg(not(feature = "small-wal-segments"))]
fn to_format6(dir: &std::path::Path) -> Result<usize, Error> {
    Err(Error::Setup(format!(
        "cannot put the log of {} into the format-6 layout: {}",
        dir.display(),
        super::stage::NEEDS_FEATURE
    )))
}
