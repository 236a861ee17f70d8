//! Lock-delay: a lock that lost its holder to expiry or force-release
//! grants nobody new until the leader ends the delay; a clean release (or
//! a revoke) never delays. Without `start_delay` the three tests that
//! expect a delay fail at their first "still closed" check (seen).

use super::*;
use crate::command::{Acquire, EndLockDelay, ExpireLeases, ForceRelease, RevokeLease};
use crate::limits::MAX_LOCK_DELAY_MS;

fn acquire_with_delay(name: &str, owner: &str, lease: LeaseId, wait: bool, ms: u64) -> Command {
    Command::Acquire(Acquire {
        name: name.into(),
        owner: owner.into(),
        lease,
        mode: Mode::Exclusive,
        wait,
        value: None,
        lock_delay_ms: ms,
    })
}

/// The delay in force on `name`: (ms, since).
fn delay(h: &Harness, name: &str) -> Option<(u64, u64)> {
    h.state
        .lock(name)
        .and_then(|l| l.delay.as_ref())
        .map(|d| (d.ms, d.since))
}

#[test]
fn an_expired_holder_closes_the_lock_for_its_delay() {
    let mut h = Harness::new();
    let (a, b, c) = (h.lease(), h.lease(), h.lease());
    assert!(matches!(
        h.reply(acquire_with_delay("res", "a", a, false, 5_000)),
        Response::Granted { .. }
    ));
    assert_eq!(
        h.reply(acquire("res", "b", b, Mode::Exclusive, true)),
        Response::Queued { position: 0 }
    );
    let (_, changes) = h.run(Command::ExpireLeases(ExpireLeases { ids: vec![a] }));
    let since = h.index;
    assert!(changes.events.contains(&Event::LockDelayStarted {
        name: "res".into(),
        since,
        ms: 5_000
    }));
    // Still closed: the waiter stays queued, a try-lock is busy, a new
    // waiter queues behind.
    assert_eq!(h.holders("res"), Vec::<String>::new());
    assert_eq!(h.waiters("res"), vec!["b"]);
    assert_eq!(delay(&h, "res"), Some((5_000, since)));
    assert_eq!(
        h.reply(acquire("res", "c", c, Mode::Exclusive, false)),
        Response::Busy
    );
    // A stale end (another delay's) changes nothing.
    assert_eq!(
        h.reply(Command::EndLockDelay(EndLockDelay {
            name: "res".into(),
            since: since - 1
        })),
        Response::LockDelayEnded { ended: false }
    );
    assert_eq!(h.waiters("res"), vec!["b"]);
    // The leader ends it: the next waiter is granted in the same step,
    // with a fence above everything before.
    let (reply, changes) = h.run(Command::EndLockDelay(EndLockDelay {
        name: "res".into(),
        since,
    }));
    assert_eq!(reply, Response::LockDelayEnded { ended: true });
    assert_eq!(h.holders("res"), vec!["b"]);
    assert!(changes.events.iter().any(
        |e| matches!(e, Event::Granted { owner, fence, .. } if owner == "b" && *fence == h.index)
    ));
    assert_eq!(delay(&h, "res"), None);
}

#[test]
fn a_force_release_delays_and_an_empty_delayed_lock_is_kept_until_it_ends() {
    let mut h = Harness::new();
    let (a, b) = (h.lease(), h.lease());
    h.reply(acquire_with_delay("res", "a", a, false, 1_000));
    h.reply(Command::ForceRelease(ForceRelease { name: "res".into() }));
    let since = h.index;
    // Nobody holds or waits, but the lock stays closed.
    assert_eq!(delay(&h, "res"), Some((1_000, since)));
    assert_eq!(
        h.reply(acquire("res", "b", b, Mode::Exclusive, false)),
        Response::Busy
    );
    h.reply(Command::EndLockDelay(EndLockDelay {
        name: "res".into(),
        since,
    }));
    assert!(h.state.lock("res").is_none(), "an empty lock is removed");
    assert!(matches!(
        h.reply(acquire("res", "b", b, Mode::Exclusive, false)),
        Response::Granted { .. }
    ));
}

#[test]
fn a_clean_release_or_revoke_never_delays() {
    let mut h = Harness::new();
    let (a, b) = (h.lease(), h.lease());
    h.reply(acquire_with_delay("res", "a", a, false, 5_000));
    h.reply(acquire("res", "b", b, Mode::Exclusive, true));
    h.reply(release("res", "a"));
    assert_eq!(h.holders("res"), vec!["b"], "granted in the release's step");
    assert_eq!(delay(&h, "res"), None);

    h.reply(acquire_with_delay("other", "b", b, false, 5_000));
    h.reply(Command::RevokeLease(RevokeLease { id: b }));
    assert!(h.state.lock("other").is_none());
    assert!(h.state.lock("res").is_none());
}

#[test]
fn a_holder_without_a_delay_hands_on_at_once() {
    let mut h = Harness::new();
    let (a, b) = (h.lease(), h.lease());
    h.reply(acquire("res", "a", a, Mode::Exclusive, false));
    h.reply(acquire("res", "b", b, Mode::Exclusive, true));
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![a] }));
    assert_eq!(h.holders("res"), vec!["b"]);
    assert_eq!(delay(&h, "res"), None);
}

#[test]
fn a_delay_survives_a_snapshot_and_is_listed() {
    let mut h = Harness::new();
    let a = h.lease();
    h.reply(acquire_with_delay("res", "a", a, false, 2_000));
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![a] }));
    let restored = LockState::from_parts(h.state.to_parts());
    assert_eq!(restored, h.state);
    let listed: Vec<_> = restored
        .lock_delays()
        .map(|(n, d)| (n.to_owned(), d.ms))
        .collect();
    assert_eq!(listed, vec![("res".to_owned(), 2_000)]);
}

#[test]
fn an_absurd_delay_is_refused() {
    let mut h = Harness::new();
    let a = h.lease();
    assert!(matches!(
        h.reply(acquire_with_delay(
            "res",
            "a",
            a,
            false,
            MAX_LOCK_DELAY_MS + 1
        )),
        Response::Rejected(CommandError::InvalidArgument(_))
    ));
    assert!(h.state.lock("res").is_none());
}
