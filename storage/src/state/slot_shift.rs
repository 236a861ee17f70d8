//! How far a restored cluster's slots (fences, lease ids) run ahead of its
//! log index, so that fences never go backwards across a restore.
//!
//! A restored cluster's log continues after the backup's index, but the
//! old cluster may have gone on granting fences after the backup was
//! taken, up to a point nobody may be able to read any more (the old
//! cluster is lost). What bounds how far it got is time: a cluster commits
//! at most [`MAX_ENTRIES_PER_MS`] entries per millisecond, so in the time
//! between the backup and the restored cluster's first request it cannot
//! have passed the backup's index by more than that many entries per
//! millisecond. A restore therefore leaves the shift *pending* with the
//! backup's wall-clock time; the first request the restored cluster
//! applies settles it from its own proposer's wall clock (carried in the
//! entry, so every replica settles it alike), before its own slot is
//! taken. From then on every slot is `slot(index + shift, position)`.
//!
//! Shifts add up: a backup of a restored cluster carries its shift, and a
//! restore from a backup taken before the first request of a restored
//! cluster keeps the earlier time, so chains of restores stay above every
//! cluster they came from.

use serde::{Deserialize, Serialize};

use crate::command::{slot, POSITION_BITS};

/// The most entries per millisecond any raftlock cluster commits, with a
/// wide margin: the leader keeps at most two entries in flight and each
/// waits for a disk sync and a round trip to a follower, so even a cluster
/// on RAM disks over loopback commits a few tens per millisecond
/// (docs/decisions.md, "Restore").
pub const MAX_ENTRIES_PER_MS: u64 = 1_000;

/// How far the restored cluster's leader's clock may be behind the clock
/// of the node that took the backup without undercutting the floor. Peers
/// already must agree within 5 minutes (peer message freshness).
pub const CLOCK_MARGIN_MS: u64 = 60 * 60 * 1000;

/// The highest `index + shift` a shift may settle at: half the index space
/// (slots are `index << 16`), leaving the other half for the cluster's own
/// growth. At [`MAX_ENTRIES_PER_MS`] it is reached by a backup about four
/// years old.
pub const MAX_SHIFTED_INDEX: u64 = 1 << (63 - POSITION_BITS);

/// How far slots run ahead of the log index.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotShift {
    /// Entries added to the log index to make a slot.
    pub entries: u64,
    /// Set by a restore, until the first request settles the shift: the
    /// wall-clock time (ms since the Unix epoch) of the backup the state
    /// came from.
    pub pending_since_ms: Option<u64>,
}

/// Why a restore cannot make its floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a restore at log index {index} from a backup taken {elapsed_ms} ms ago would start \
     fences past the index space (index plus {max_entries_per_ms} entries per ms since the \
     backup, at most {max})",
    max_entries_per_ms = MAX_ENTRIES_PER_MS,
    max = MAX_SHIFTED_INDEX
)]
pub struct ShiftTooLarge {
    /// The restored log's first index.
    pub index: u64,
    /// How long ago the backup was taken.
    pub elapsed_ms: u64,
}

impl SlotShift {
    /// The shift of a cluster restored at log index `index` from a backup
    /// whose state had `self` and was taken at `taken_at_ms`. `now_ms` is
    /// the restoring machine's clock, used only to refuse a backup so old
    /// that the floor would not fit.
    pub fn restored(
        self,
        index: u64,
        taken_at_ms: u64,
        now_ms: u64,
    ) -> Result<SlotShift, ShiftTooLarge> {
        let since = self
            .pending_since_ms
            .map_or(taken_at_ms, |t| t.min(taken_at_ms));
        let restored = SlotShift {
            entries: self.entries,
            pending_since_ms: Some(since),
        };
        let elapsed_ms = now_ms.saturating_sub(since);
        match index.checked_add(restored.settled_at(now_ms).entries) {
            Some(at) if at < MAX_SHIFTED_INDEX => Ok(restored),
            _ => Err(ShiftTooLarge { index, elapsed_ms }),
        }
    }

    /// The shift once settled by a request proposed at `time_ms`.
    pub fn settled_at(self, time_ms: u64) -> SlotShift {
        let Some(since) = self.pending_since_ms else {
            return self;
        };
        let elapsed = time_ms
            .saturating_sub(since)
            .saturating_add(CLOCK_MARGIN_MS);
        let ahead = elapsed.saturating_mul(MAX_ENTRIES_PER_MS);
        SlotShift {
            entries: self.entries.saturating_add(ahead),
            pending_since_ms: None,
        }
    }

    /// The slot of the request at `position` of the entry at `index`,
    /// proposed at `time_ms`; settles a pending shift first. A shift that
    /// would run past [`MAX_SHIFTED_INDEX`] (a leader's clock years ahead)
    /// settles there instead.
    pub fn slot(&mut self, index: u64, position: usize, time_ms: u64) -> u64 {
        if self.pending_since_ms.is_some() {
            let settled = self.settled_at(time_ms);
            let room = MAX_SHIFTED_INDEX.saturating_sub(index);
            *self = SlotShift {
                entries: settled.entries.min(room.max(self.entries)),
                pending_since_ms: None,
            };
        }
        slot(index.saturating_add(self.entries), position)
    }

    /// The lowest fence the cluster can grant at `index` or later, if its
    /// first request came at `time_ms`.
    pub fn floor(self, index: u64, time_ms: u64) -> u64 {
        slot(index.saturating_add(self.settled_at(time_ms).entries), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MS: u64 = 60 * 60 * 1000;

    #[test]
    fn a_cluster_never_restored_uses_log_positions() {
        let mut shift = SlotShift::default();
        assert_eq!(shift.slot(7, 3, 1_000), slot(7, 3));
        assert_eq!(shift, SlotShift::default());
    }

    /// The old cluster granted millions of fences after the backup, as fast
    /// as a cluster can (at most `MAX_ENTRIES_PER_MS`); the first fence of
    /// the restored cluster is above all of them. With the shift left out
    /// (slots at log positions) it is not: `slot(backup + 1, 0)` is below
    /// the old cluster's last fence.
    #[test]
    fn the_first_fence_after_a_restore_is_above_every_fence_the_old_cluster_could_grant() {
        let backup_index = 1_000;
        let taken_at = 1_700_000_000_000;
        for elapsed_ms in [0, 1, 2_000, 5 * 60 * 1000, 24 * HOUR_MS] {
            // The old cluster's highest possible fence at the restore.
            let old_last_index = backup_index + elapsed_ms * MAX_ENTRIES_PER_MS;
            let old_highest = slot(old_last_index, (1 << POSITION_BITS) - 1);
            let now = taken_at + elapsed_ms;
            let mut shift = SlotShift::default()
                .restored(backup_index, taken_at, now)
                .unwrap();
            // The restored cluster's first request, proposed later still.
            let first = shift.slot(backup_index + 1, 0, now + 10);
            assert!(
                first > old_highest,
                "{elapsed_ms} ms: {first} <= {old_highest}"
            );
            assert_eq!(shift.pending_since_ms, None, "settled");
            // Later requests go on from there.
            assert!(shift.slot(backup_index + 2, 0, now) > first);
            assert!(slot(backup_index + 1, 0) < old_highest || elapsed_ms == 0);
        }
    }

    /// A leader clock behind the backup's by less than the margin still
    /// clears every fence the old cluster granted by the backup's clock.
    #[test]
    fn a_restoring_clock_behind_the_backups_is_covered_by_the_margin() {
        let taken_at = 10 * HOUR_MS;
        let mut shift = SlotShift::default()
            .restored(50, taken_at, taken_at)
            .unwrap();
        let behind = taken_at - 30 * 60 * 1000;
        let first = shift.slot(51, 0, behind);
        // What the old cluster could grant in the half hour it ran ahead.
        let old_highest = slot(50 + 30 * 60 * 1000 * MAX_ENTRIES_PER_MS, 0);
        assert!(first > old_highest);
    }

    /// Restore A from a backup, let it grant, back it up, restore B from
    /// that: B starts above A. Restore B again from A's first backup
    /// (taken before A's first request): B still starts above A.
    #[test]
    fn chains_of_restores_keep_rising() {
        let t0 = 100 * HOUR_MS;
        let mut a = SlotShift::default().restored(10, t0, t0 + 1_000).unwrap();
        let a_first = a.slot(11, 0, t0 + 2_000);
        // A runs for an hour as fast as a cluster can.
        let a_last_index = 11 + HOUR_MS * MAX_ENTRIES_PER_MS;
        let a_highest = slot(a_last_index + a.entries, 0);
        assert!(a_highest > a_first);
        // A backup of A taken then, restored a minute later.
        let taken = t0 + 2_000 + HOUR_MS;
        let mut b = a.restored(a_last_index, taken, taken + 60_000).unwrap();
        assert!(b.slot(a_last_index + 1, 0, taken + 60_000) > a_highest);
        // A backup of A taken before its first request (still pending).
        let pending = SlotShift::default().restored(10, t0, t0 + 1_000).unwrap();
        let late = t0 + 2_000 + HOUR_MS + 60_000;
        let mut c = pending.restored(10, t0 + 1_500, late).unwrap();
        assert_eq!(c.pending_since_ms, Some(t0), "the earlier time is kept");
        assert!(c.slot(11, 0, late) > a_highest);
    }

    #[test]
    fn a_backup_too_old_for_the_index_space_is_refused() {
        let years = 10 * 365 * 24 * HOUR_MS;
        let refused = SlotShift::default().restored(5, 0, years).unwrap_err();
        assert_eq!(refused.elapsed_ms, years);
        assert!(refused.to_string().contains("index space"), "{refused}");
    }

    /// A leader whose clock is decades ahead cannot push slots past the
    /// index space (where `slot` would wrap and fences go backwards).
    #[test]
    fn a_clock_far_ahead_settles_at_the_cap() {
        let mut shift = SlotShift::default().restored(5, 0, 0).unwrap();
        let first = shift.slot(6, 0, u64::MAX);
        assert_eq!(first, slot(MAX_SHIFTED_INDEX, 0));
        assert!(shift.slot(7, 0, 0) > first);
    }
}
