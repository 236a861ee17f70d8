//! Cuts aimed inside a stage of the Raft log's life (`--stage`): instead
//! of killing the victims at a seeded moment, a round arms a LazyFs cut
//! point on one victim's disk — the power goes right before or after one
//! operation of the write-ahead log — and kills the victims once it fired.
//! The stages:
//!
//! - `append`: a `pwrite` of records to a segment of `wal/`, or its
//!   `fdatasync`;
//! - `rotate`: the creation of the next segment (before it: the full one is
//!   synced) or one of the operations after it: the start record's write,
//!   its sync, the directory's sync;
//! - `purge`: the deletion of a segment after a snapshot, or the directory
//!   sync after it;
//! - `upgrade`: the victims' logs are first put back into the layout of
//!   record format 6 (in sled, no `wal/`), and the cut lands inside the move
//!   across that their restart makes: `wal.upgrading/` made, a segment of it
//!   created, written or synced, or renamed to `wal/`.
//!
//! `any` takes the four in turn, round by round. Each round's line says
//! which operation the cut landed on (or that the point never fired: the
//! round then cuts as a timed one would).

use std::collections::BTreeMap;
use std::time::Duration;

use raftlock_lazyfs::{CutPoint, Op, When};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Why `upgrade` (and `any`) cannot run in this build.
pub const NEEDS_FEATURE: &str = "`--stage upgrade` and `--stage any` need the chaos binary built \
     with `--features small-wal-segments` (which brings the format-6 writer)";

/// How long a round waits for its cut point to fire.
pub const FIRE_WITHIN: Duration = Duration::from_secs(60);

/// Where a run aims its cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Stage {
    /// At a seeded moment of the load, wherever the log is.
    Timed,
    /// Inside an append.
    Append,
    /// Inside a segment rotation.
    Rotate,
    /// Inside a purge's segment deletion.
    Purge,
    /// Inside the move of a format-6 log out of sled.
    Upgrade,
    /// The four aimed stages in turn.
    Any,
}

impl Stage {
    /// The flag value.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Timed => "timed",
            Stage::Append => "append",
            Stage::Rotate => "rotate",
            Stage::Purge => "purge",
            Stage::Upgrade => "upgrade",
            Stage::Any => "any",
        }
    }
}

/// One round's aimed cut.
#[derive(Debug, Clone)]
pub struct Aim {
    /// Append, rotate, purge or upgrade.
    pub stage: Stage,
    /// The victim whose disk the point is armed on.
    pub disk: u64,
    pub point: CutPoint,
}

/// The aims of `rounds` rounds at `stage` (none for `timed`), drawn from
/// `seed`; `victims[r]` are round r's victims.
pub fn draw(seed: u64, stage: Stage, victims: &[Vec<u64>]) -> Vec<Option<Aim>> {
    const AIMED: [Stage; 4] = [Stage::Append, Stage::Rotate, Stage::Purge, Stage::Upgrade];
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xa1_5e57);
    victims
        .iter()
        .enumerate()
        .map(|(r, ids)| {
            let stage = match stage {
                Stage::Timed => return None,
                Stage::Any => AIMED[r % AIMED.len()],
                one => one,
            };
            let disk = *ids.choose(&mut rng)?;
            let point = point(stage, &mut rng);
            Some(Aim { stage, disk, point })
        })
        .collect()
}

/// A cut point inside `stage`.
fn point(stage: Stage, rng: &mut ChaCha8Rng) -> CutPoint {
    let when = if rng.gen_bool(0.5) {
        When::Before
    } else {
        When::After
    };
    let at = |op, path: &str, nth, then| CutPoint {
        op,
        path: path.into(),
        nth,
        then,
        when,
    };
    // Segments are `/data/wal/NNN.wal`; "/data/wal" also names the
    // directory (its syncs) but not `wal.upgrading`'s files.
    match stage {
        Stage::Append if rng.gen_bool(0.5) => {
            at(Op::Write, "/data/wal/", rng.gen_range(1..=200), 0)
        }
        Stage::Append => at(Op::Fsync, "/data/wal/", rng.gen_range(1..=100), 0),
        // Then 0: the create; 1: the start record's write; 2: its sync;
        // 3: the directory's sync.
        Stage::Rotate => at(Op::Create, "/data/wal", 1, rng.gen_range(0..=3)),
        // Then 0: the unlink; 1: the directory's sync after it.
        Stage::Purge => at(
            Op::Remove,
            "/data/wal",
            rng.gen_range(1..=2),
            rng.gen_range(0..=1),
        ),
        Stage::Upgrade => match rng.gen_range(0..4) {
            // Then 0: the mkdir; 1, 2: the first segment's create and write.
            0 => at(Op::Mkdir, "/data/wal.upgrading", 1, rng.gen_range(0..=2)),
            1 => at(Op::Write, "/data/wal.upgrading/", rng.gen_range(1..=4), 0),
            2 => at(Op::Fsync, "/data/wal.upgrading", rng.gen_range(1..=2), 0),
            _ => at(Op::Rename, "/data/wal.upgrading", 1, 0),
        },
        Stage::Timed | Stage::Any => unreachable!("draw() maps these to an aimed stage"),
    }
}

/// Aimed cuts per stage: (aimed, fired).
#[derive(Debug, Default)]
pub struct Tally(BTreeMap<Stage, (u32, u32)>);

impl Tally {
    /// Counts one aimed round.
    pub fn add(&mut self, stage: Stage, fired: bool) {
        let count = self.0.entry(stage).or_default();
        count.0 += 1;
        count.1 += u32::from(fired);
    }

    /// The summary's line (none when no round was aimed).
    pub fn line(&self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(stage, (aimed, fired))| format!("{} {fired} of {aimed} fired", stage.label()))
            .collect();
        Some(format!("cut points: {}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `any` takes the four stages in turn, each on one of its round's
    /// victims, and a seed replays the draw.
    #[test]
    fn any_takes_the_stages_in_turn() {
        let victims = vec![
            vec![1, 2, 3],
            vec![2, 3],
            vec![1, 3],
            vec![1, 2],
            vec![1, 2, 3],
        ];
        let aims = draw(7, Stage::Any, &victims);
        let stages: Vec<Stage> = aims.iter().flatten().map(|a| a.stage).collect();
        use Stage::*;
        assert_eq!(stages, [Append, Rotate, Purge, Upgrade, Append]);
        for (aim, ids) in aims.iter().zip(&victims) {
            assert!(ids.contains(&aim.as_ref().expect("aimed").disk));
        }
        let again: Vec<_> = draw(7, Stage::Any, &victims)
            .into_iter()
            .map(|a| a.map(|a| a.point))
            .collect();
        let first: Vec<_> = aims.into_iter().map(|a| a.map(|a| a.point)).collect();
        assert_eq!(again, first);
        assert!(draw(7, Stage::Timed, &victims).iter().all(Option::is_none));
    }

    #[test]
    fn the_tally_line_counts_per_stage() {
        let mut tally = Tally::default();
        assert_eq!(tally.line(), None);
        tally.add(Stage::Rotate, true);
        tally.add(Stage::Append, true);
        tally.add(Stage::Rotate, false);
        assert_eq!(
            tally.line().as_deref(),
            Some("cut points: append 1 of 1 fired, rotate 1 of 2 fired")
        );
    }
}
