//! Power cuts aimed at one operation: a [`CutPoint`] names the Nth
//! operation of a kind on a path; when it comes, the disk loses power right
//! before or right after it. From then on no operation changes anything:
//! each caller that asks for a change is held, unanswered, until it is being
//! killed (the test kills the processes using the disk, then calls
//! [`cut_power`](crate::LazyFs::cut_power)), and then gets `EIO`, which it
//! never sees. Reads still pass: they change nothing a cut could keep.
//!
//! So the durable state a cut leaves is exactly the one at the named
//! operation, however long the test takes to kill the processes.

use std::path::PathBuf;
use std::time::Duration;

/// The kinds of operation a cut point can name: the ones that change what
/// a cut keeps or drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// A new file (`open(O_CREAT)`, `mknod`).
    Create,
    /// A new directory.
    Mkdir,
    /// A `write` / `pwrite` to a file (one per MiB of a larger one).
    Write,
    /// An `fsync` / `fdatasync` of a file.
    Fsync,
    /// An `fsync` of a directory.
    FsyncDir,
    /// An `unlink` of a file or `rmdir` of a directory.
    Remove,
    /// A `rename`; its path is the source's.
    Rename,
}

/// Whether the cut comes before the operation (it never happens) or after
/// it (it happened, and was never answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum When {
    /// The operation is not applied.
    Before,
    /// The operation is applied to the current view (not made durable,
    /// unless it is a sync).
    After,
}

/// Where to cut: the `nth` operation (1-based, counted from when it is
/// armed) of kind `op` whose path contains `path` (paths are absolute from
/// the mount's root: `/data/wal/00000000000000000002.wal`), or, with
/// `then` > 0, the `then`-th operation of any kind on such a path after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutPoint {
    /// The kind of operation.
    pub op: Op,
    /// A part of its path.
    pub path: String,
    /// Which match (1 is the first).
    pub nth: u64,
    /// How many changing operations on a matching path later.
    pub then: u64,
    /// Before or after the operation the cut lands on.
    pub when: When,
}

/// The operation a cut point fired on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The point that fired.
    pub point: CutPoint,
    /// The kind of operation the cut landed on.
    pub op: Op,
    /// Its full path, from the mount's root.
    pub path: PathBuf,
    /// The caller's process (thread) id.
    pub pid: u32,
}

impl std::fmt::Display for Fired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let when = match self.point.when {
            When::Before => "before",
            When::After => "after",
        };
        let p = &self.point;
        write!(
            f,
            "{when} {:?} of {} ({:?} #{} on {}, then {})",
            self.op,
            self.path.display(),
            p.op,
            p.nth,
            p.path,
            p.then
        )
    }
}

/// An armed point and how far it got.
#[derive(Debug)]
pub(crate) struct Armed {
    point: CutPoint,
    /// Operations of its kind on its path so far.
    seen: u64,
    /// Once the `nth` matched: operations on its path since.
    since: Option<u64>,
}

/// The cut point's state in the model.
#[derive(Debug, Default)]
pub(crate) struct Aim {
    /// The armed point.
    pub(crate) armed: Option<Armed>,
    /// What fired, kept until the next [`arm`](crate::LazyFs::arm).
    pub(crate) fired: Option<Fired>,
    /// The power is off: nothing changes until the next cut.
    pub(crate) frozen: bool,
}

/// What a changing operation does under the aim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Apply it and answer as usual.
    Pass,
    /// Do not apply it; hold the caller.
    Off,
    /// Apply it, then hold the caller (the cut comes right after it).
    ApplyThenOff,
}

impl Aim {
    /// Arms `point`, forgetting what fired before.
    pub(crate) fn arm(&mut self, point: CutPoint) {
        self.armed = Some(Armed {
            point,
            seen: 0,
            since: None,
        });
        self.fired = None;
    }

    /// Whether the armed point may count `op` (so its path is worth
    /// working out).
    pub(crate) fn wants(&self, op: Op) -> bool {
        matches!(&self.armed, Some(a) if a.since.is_some() || a.point.op == op)
    }

    /// Decides the fate of operation `op` on `path` (None when the point
    /// cannot count it) by caller `pid`.
    pub(crate) fn gate(&mut self, op: Op, path: Option<PathBuf>, pid: u32) -> Gate {
        if self.frozen {
            return Gate::Off;
        }
        let (Some(armed), Some(path)) = (&mut self.armed, path) else {
            return Gate::Pass;
        };
        if !path.to_string_lossy().contains(armed.point.path.as_str()) {
            return Gate::Pass;
        }
        let lands = match &mut armed.since {
            Some(since) => {
                *since += 1;
                *since == armed.point.then
            }
            None if armed.point.op != op => false,
            None => {
                armed.seen += 1;
                if armed.seen == armed.point.nth && armed.point.then > 0 {
                    armed.since = Some(0);
                }
                armed.seen == armed.point.nth && armed.point.then == 0
            }
        };
        if !lands {
            return Gate::Pass;
        }
        let point = armed.point.clone();
        self.armed = None;
        self.frozen = true;
        let gate = match point.when {
            When::Before => Gate::Off,
            When::After => Gate::ApplyThenOff,
        };
        self.fired = Some(Fired {
            point,
            op,
            path,
            pid,
        });
        gate
    }
}

/// How often a held caller is checked.
const HOLD_POLL: Duration = Duration::from_millis(1);

/// Waits until caller `pid` is being killed (or is gone) or `frozen()`
/// turns false (the power came back: a cut, or the unmount).
pub(crate) fn hold(pid: u32, frozen: impl Fn() -> bool) {
    while frozen() && !dying(pid) {
        std::thread::sleep(HOLD_POLL);
    }
}

/// Whether thread `pid` is gone, a zombie, or has SIGKILL pending (a
/// fatal signal puts SIGKILL in every thread's own pending set).
fn dying(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return true;
    };
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    status.lines().any(|line| {
        let Some((key, value)) = line.split_once(':') else {
            return false;
        };
        let value = value.trim();
        match key {
            "State" => value.starts_with('Z') || value.starts_with('X'),
            "SigPnd" | "ShdPnd" => {
                u64::from_str_radix(value, 16).is_ok_and(|set| set & SIGKILL_BIT != 0)
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(nth: u64, then: u64, when: When) -> CutPoint {
        CutPoint {
            op: Op::Create,
            path: "/wal/".into(),
            nth,
            then,
            when,
        }
    }

    #[test]
    fn the_nth_matching_operation_fires_and_freezes() {
        let mut aim = Aim::default();
        aim.arm(point(2, 0, When::After));
        let seg = || Some(PathBuf::from("/data/wal/2.wal"));
        assert_eq!(aim.gate(Op::Write, seg(), 7), Gate::Pass, "other kind");
        let other = Some(PathBuf::from("/data/db"));
        assert_eq!(aim.gate(Op::Create, other, 7), Gate::Pass, "other path");
        assert_eq!(aim.gate(Op::Create, seg(), 7), Gate::Pass, "first match");
        assert_eq!(aim.gate(Op::Create, seg(), 7), Gate::ApplyThenOff);
        assert!(aim.frozen && aim.armed.is_none());
        assert_eq!(aim.fired.as_ref().map(|f| f.pid), Some(7));
        assert_eq!(aim.gate(Op::Write, None, 8), Gate::Off, "power is off");
    }

    #[test]
    fn before_does_not_apply_the_operation() {
        let mut aim = Aim::default();
        aim.arm(point(1, 0, When::Before));
        let seg = Some(PathBuf::from("/data/wal/1.wal"));
        assert_eq!(aim.gate(Op::Create, seg, 1), Gate::Off);
    }

    #[test]
    fn then_counts_any_operation_on_the_path_after_the_match() {
        let mut aim = Aim::default();
        aim.arm(point(1, 2, When::Before));
        let seg = || Some(PathBuf::from("/data/wal/3.wal"));
        assert!(!aim.wants(Op::Write));
        assert_eq!(aim.gate(Op::Create, seg(), 1), Gate::Pass, "the match");
        assert!(aim.wants(Op::Write));
        assert_eq!(aim.gate(Op::Write, seg(), 1), Gate::Pass, "then 1");
        assert_eq!(aim.gate(Op::Fsync, seg(), 1), Gate::Off, "then 2");
        let fired = aim.fired.expect("fired");
        assert_eq!(fired.op, Op::Fsync);
        assert_eq!(
            fired.to_string(),
            "before Fsync of /data/wal/3.wal (Create #1 on /wal/, then 2)"
        );
    }

    #[test]
    fn a_missing_thread_counts_as_dying_and_this_one_does_not() {
        assert!(dying(u32::MAX));
        assert!(!dying(std::process::id()));
    }
}
