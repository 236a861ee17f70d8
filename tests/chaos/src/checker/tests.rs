//! The checker must fail: hand-made histories, one per kind of violation,
//! each reported by the check meant to catch it (and a clean history
//! passing everything).

use super::*;
use crate::history::{Failure, Mode, Op, OpId, Outcome, Value};
use crate::register::Cell;

/// A history under construction.
#[derive(Default)]
struct H {
    ops: Vec<Operation>,
    observations: Vec<crate::history::Observation>,
}

impl H {
    fn op(&mut self, client: u32, span: (u64, u64), op: Op, outcome: Outcome) -> &mut Self {
        self.push(client, span.0, op, Some((span.1, outcome)))
    }
    /// An op invoked at `at` that never got an answer.
    fn lost(&mut self, client: u32, at: u64, op: Op) -> &mut Self {
        self.push(client, at, op, None)
    }
    fn push(
        &mut self,
        client: u32,
        invoke: u64,
        op: Op,
        answer: Option<(u64, Outcome)>,
    ) -> &mut Self {
        let seq = self.ops.len() as u64;
        let (complete, outcome) = answer.unzip();
        self.ops.push(Operation {
            id: OpId {
                client,
                worker: 0,
                seq,
            },
            op,
            invoke,
            complete,
            outcome,
        });
        self
    }
    fn acquire(
        &mut self,
        c: u32,
        span: (u64, u64),
        owner: &str,
        lease: u64,
        got: Outcome,
    ) -> &mut Self {
        self.acquire_mode(c, span, owner, lease, Mode::Exclusive, got)
    }
    fn acquire_mode(
        &mut self,
        c: u32,
        span: (u64, u64),
        owner: &str,
        lease: u64,
        mode: Mode,
        got: Outcome,
    ) -> &mut Self {
        self.op(c, span, acquire_op(owner, lease, mode, true), got)
    }
    /// An exclusive try-lock (no wait) answered busy.
    fn busy(&mut self, c: u32, span: (u64, u64), owner: &str, lease: u64) -> &mut Self {
        let op = acquire_op(owner, lease, Mode::Exclusive, false);
        self.op(c, span, op, Outcome::Ok(Value::Busy))
    }
    fn release(&mut self, c: u32, span: (u64, u64), owner: &str, got: Outcome) -> &mut Self {
        let op = Op::Release {
            name: "x".into(),
            owner: owner.into(),
        };
        self.op(c, span, op, got)
    }
    fn keep_alive(&mut self, c: u32, span: (u64, u64), lease: u64, got: Outcome) -> &mut Self {
        self.op(c, span, Op::KeepAlive { lease }, got)
    }
    fn history(&self) -> History {
        let mut ops = self.ops.clone();
        ops.sort_by_key(|o| (o.invoke, o.id));
        History {
            ops,
            observations: self.observations.clone(),
        }
    }
}

/// An acquire of lock "x" by `owner` on `lease`.
fn acquire_op(owner: &str, lease: u64, mode: Mode, wait: bool) -> Op {
    Op::Acquire {
        name: "x".into(),
        owner: owner.into(),
        lease,
        mode,
        wait,
    }
}

fn granted(fence: u64) -> Outcome {
    Outcome::Ok(Value::Granted { fence, count: 1 })
}
fn released() -> Outcome {
    Outcome::Ok(Value::Remaining { count: 0 })
}
fn alive() -> Outcome {
    Outcome::Ok(Value::Remaining { count: 2000 })
}
fn gone() -> Outcome {
    Outcome::Fail(Failure::LeaseExpired)
}

/// Asserts that each of `checks` finds something in `h`'s history.
fn assert_reported(h: &H, checks: &[&str]) {
    let found = failing(&h.history(), &Cells::new());
    for check in checks {
        assert!(found.contains(check), "{check} not in {found:?}");
    }
}

/// Asserts that exactly `checks` find something in `h`'s history.
fn assert_failing_exactly(h: &H, checks: &[&str]) {
    assert_eq!(failing(&h.history(), &Cells::new()), checks);
}

/// Names of the checks that found something.
fn failing(h: &History, cells: &Cells) -> Vec<&'static str> {
    check_all(h, cells)
        .into_iter()
        .filter(|v| !v.violations.is_empty())
        .map(|v| v.check)
        .collect()
}

#[test]
fn a_clean_history_passes_every_check() {
    let mut h = H::default();
    h.acquire(1, (0, 10), "a", 1, granted(5))
        .keep_alive(1, (11, 12), 1, alive())
        .release(1, (20, 30), "a", released())
        .acquire(2, (5, 40), "b", 2, granted(9))
        // Lease 3's holder is never heard from again: it may have expired,
        // so the grant to d is fine.
        .acquire(3, (50, 60), "c", 3, granted(12))
        .acquire(4, (55, 90), "d", 4, granted(15))
        .lost(2, 95, Op::Revoke { lease: 2 });
    let cells = Cells::new();
    assert_eq!(failing(&h.history(), &cells), Vec::<&str>::new());
}

/// a granted (fence 5) from 0 to 10, then b (fence 8) from 12 to 20.
fn b_granted_after_a() -> H {
    let mut h = H::default();
    h.acquire(1, (0, 10), "a", 1, granted(5))
        .acquire(2, (12, 20), "b", 2, granted(8));
    h
}

/// b is granted while a holds: a proves it still held after b's grant by
/// releasing successfully, or by a keep-alive of its lease.
#[test]
fn overlapping_exclusive_holds_are_reported() {
    let proofs: [fn(&mut H); 2] = [
        |h| {
            h.release(1, (25, 30), "a", released());
        },
        |h| {
            h.keep_alive(1, (21, 22), 1, alive());
        },
    ];
    for prove in proofs {
        let mut h = b_granted_after_a();
        prove(&mut h);
        assert_reported(&h, &["no overlapping holds", "linearizable (Wing-Gong)"]);
    }
}

/// A hold is proven live by an op called after the new grant was
/// answered: one called at that instant proves nothing, one a tick later
/// does (and a keep-alive after the holder gave the lock back proves
/// nothing either).
#[test]
fn only_proof_after_the_grant_counts() {
    let overlap = |release_at: u64, keep_alive_at: u64| {
        let mut h = b_granted_after_a();
        h.keep_alive(1, (keep_alive_at, keep_alive_at + 1), 1, alive())
            .release(1, (release_at, 40), "a", released());
        failing(&h.history(), &Cells::new()).contains(&"no overlapping holds")
    };
    assert!(!overlap(20, 15));
    assert!(overlap(21, 15));
    assert!(
        !overlap(20, 25),
        "a keep-alive after the release proves no hold"
    );
    assert!(
        overlap(30, 21),
        "a keep-alive before the release proves the hold"
    );
}

#[test]
fn too_many_semaphore_holders_are_reported() {
    let sem = Mode::Permits { count: 1, limit: 2 };
    let mut h = H::default();
    h.acquire_mode(1, (0, 5), "a", 1, sem, granted(3))
        .acquire_mode(2, (0, 6), "b", 2, sem, granted(4))
        .acquire_mode(3, (7, 9), "c", 3, sem, granted(7))
        .release(1, (10, 11), "a", released())
        .release(2, (10, 12), "b", released());
    assert_reported(&h, &["no overlapping holds", "linearizable (Wing-Gong)"]);
}

#[test]
fn decreasing_fencing_tokens_are_reported() {
    let mut h = H::default();
    h.acquire(1, (0, 10), "a", 1, granted(9))
        .release(1, (11, 12), "a", released())
        .acquire(2, (13, 20), "b", 2, granted(7));
    assert_reported(&h, &["fencing tokens increase", "linearizable (Wing-Gong)"]);
}

#[test]
fn one_token_for_two_exclusive_owners_is_reported() {
    let mut h = H::default();
    h.acquire(1, (0, 10), "a", 1, granted(9))
        .acquire(2, (0, 10), "b", 2, granted(9));
    assert_reported(&h, &["fencing tokens increase"]);
}

#[test]
fn shared_holders_granted_together_may_share_a_token() {
    let mut h = H::default();
    h.acquire_mode(1, (0, 10), "a", 1, Mode::Shared, granted(9))
        .acquire_mode(2, (0, 10), "b", 2, Mode::Shared, granted(9))
        .release(1, (11, 12), "a", released())
        .release(2, (11, 12), "b", released());
    assert_failing_exactly(&h, &[]);
}

#[test]
fn a_grant_to_a_lease_reported_gone_is_reported() {
    let mut h = H::default();
    h.keep_alive(1, (0, 3), 7, gone())
        .acquire(1, (4, 6), "z", 7, granted(11));
    assert_reported(
        &h,
        &["no grant to a dead lease", "linearizable (Wing-Gong)"],
    );
}

#[test]
fn a_revoked_lease_that_keeps_living_is_not_linearizable() {
    let mut h = H::default();
    h.op(1, (0, 2), Op::Revoke { lease: 4 }, Outcome::Ok(Value::Unit))
        .acquire(2, (0, 1), "a", 4, granted(3))
        .keep_alive(1, (5, 6), 4, alive());
    assert_failing_exactly(&h, &["linearizable (Wing-Gong)"]);
}

#[test]
fn a_try_lock_refused_on_a_free_lock_is_not_linearizable() {
    let mut h = H::default();
    h.busy(1, (0, 2), "a", 1);
    assert_failing_exactly(&h, &["linearizable (Wing-Gong)"]);
}

#[test]
fn an_unknown_acquire_may_or_may_not_have_happened() {
    let mut h = H::default();
    // a's acquire got no answer; b is granted later, then a's lease is
    // revoked. Either way is linearizable.
    h.lost(1, 0, acquire_op("a", 1, Mode::Exclusive, true))
        .acquire(2, (10, 20), "b", 2, granted(9))
        .op(
            1,
            (30, 31),
            Op::Revoke { lease: 1 },
            Outcome::Ok(Value::Unit),
        );
    assert_failing_exactly(&h, &[]);
}

#[test]
fn lost_updates_and_uncounted_increments_are_reported() {
    let mut h = H::default();
    let write = |fence, value| Op::RegWrite {
        name: "x".into(),
        fence,
        value,
    };
    h.op(
        1,
        (0, 1),
        write(5, 1),
        Outcome::Ok(Value::Register { value: 1 }),
    )
    .op(
        2,
        (2, 3),
        write(6, 1),
        Outcome::Ok(Value::Register { value: 1 }),
    );
    let mut cells = Cells::new();
    cells.insert(
        "x".into(),
        Cell {
            value: 1,
            max_fence: 6,
            writes: vec![(5, 0, 1), (6, 1, 1)],
            refused: 0,
        },
    );
    let v = register::check(&h.history(), &cells);
    assert_eq!(v.violations.len(), 2, "{v:?}");
    assert!(v.violations[0].what.contains("lost update"));
    assert!(v.violations[1]
        .what
        .contains("2 increments were acknowledged"));
}

#[test]
fn a_stale_token_accepted_by_the_register_is_reported() {
    let mut cells = Cells::new();
    cells.insert(
        "x".into(),
        Cell {
            value: 2,
            max_fence: 9,
            writes: vec![(9, 0, 1), (4, 1, 2)],
            refused: 0,
        },
    );
    let v = register::check(&History::default(), &cells);
    assert!(v
        .violations
        .iter()
        .any(|x| x.what.contains("accepted token 4 after token 9")));
}

#[test]
fn two_leaders_in_one_term_are_reported() {
    let mut h = H::default();
    let campaign = |owner: &str, lease| Op::Campaign {
        name: "e".into(),
        owner: owner.into(),
        lease,
    };
    h.op(1, (0, 5), campaign("a", 1), granted(10))
        .op(2, (0, 5), campaign("b", 2), granted(10));
    let v = election::one_leader_per_term(&h.history());
    assert_eq!(v.violations.len(), 1, "{v:?}");
    assert!(failing(&h.history(), &Cells::new()).contains(&"linearizable (Wing-Gong)"));
}

#[test]
fn an_observer_seeing_an_older_term_is_reported() {
    let mut h = H::default();
    for (t, fence) in [(1, 10), (2, 14), (3, 12)] {
        h.observations.push(crate::history::Observation {
            client: 1,
            stream: 0,
            t,
            name: "e".into(),
            owner: Some(format!("o{fence}")),
            fence,
        });
    }
    let v = election::observers_see_increasing_terms(&h.history());
    assert_eq!(v.violations.len(), 1, "{v:?}");
}

#[test]
fn a_leader_read_naming_a_deposed_leader_is_not_linearizable() {
    let mut h = H::default();
    let campaign = |owner: &str, lease| Op::Campaign {
        name: "e".into(),
        owner: owner.into(),
        lease,
    };
    let resign = Op::Resign {
        name: "e".into(),
        owner: "a".into(),
    };
    let leader = Op::Leader { name: "e".into() };
    h.op(1, (0, 5), campaign("a", 1), granted(10))
        .op(1, (6, 7), resign, Outcome::Ok(Value::Unit))
        .op(
            2,
            (8, 9),
            leader,
            Outcome::Ok(Value::Leader {
                owner: Some("a".into()),
                fence: 10,
            }),
        );
    assert_reported(&h, &["linearizable (Wing-Gong)"]);
}

#[test]
fn a_timed_out_wait_may_have_held_the_lock_inside_the_call() {
    // a's wait timed out, but while it waited the lock was busy with no
    // other holder: the grant happened and the server's cancel released it.
    let mut h = H::default();
    h.acquire(1, (0, 20), "a", 1, Outcome::Fail(Failure::Timeout))
        .busy(2, (5, 6), "b", 2)
        .keep_alive(1, (25, 26), 1, alive())
        .acquire(2, (27, 30), "c", 2, granted(9));
    assert_failing_exactly(&h, &[]);
}

#[test]
fn a_grant_left_behind_by_a_timed_out_wait_is_not_linearizable() {
    // The lock is still busy after a's wait timed out, with a's lease alive
    // and nobody else holding: the cancel did not release the grant.
    let mut h = H::default();
    h.acquire(1, (0, 20), "a", 1, Outcome::Fail(Failure::Timeout))
        .busy(2, (25, 26), "b", 2)
        .keep_alive(1, (27, 28), 1, alive());
    assert_failing_exactly(&h, &["linearizable (Wing-Gong)"]);
}
