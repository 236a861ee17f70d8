//! Locks whose TTL is their own: `AcquireWithTtl` makes the lease and the
//! hold in one entry, or (busy, refused) changes nothing at all. Without
//! taking the lease back on a busy answer, `a_busy_lock_makes_no_lease`
//! finds a stray lease (seen).

use super::*;
use crate::command::{AcquireWithTtl, ExpireLeases};

fn take(name: &str, owner: &str, ttl_ms: u64) -> Command {
    Command::AcquireWithTtl(AcquireWithTtl {
        name: name.into(),
        owner: owner.into(),
        ttl_ms,
        mode: Mode::Exclusive,
        lock_delay_ms: 0,
    })
}

#[test]
fn a_free_lock_is_taken_on_a_lease_of_its_own() {
    let mut h = Harness::new();
    let (reply, changes) = h.run(take("res", "a", 250));
    let Response::GrantedWithLease {
        lease,
        fence,
        count,
    } = reply
    else {
        panic!("not granted: {reply:?}");
    };
    assert_eq!((lease, count), (h.index, 1));
    assert!(fence > 0);
    assert_eq!(h.state.lease(lease).map(|l| l.ttl_ms), Some(250));
    assert!(changes.events.contains(&Event::LeaseGranted {
        id: lease,
        ttl_ms: 250
    }));
    assert_eq!(h.holders("res"), vec!["a"]);
    // Its lease ends it: expiry frees the lock for the next.
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![lease] }));
    assert_eq!(h.holders("res"), Vec::<String>::new());
    assert!(matches!(
        h.reply(take("res", "b", 1)),
        Response::GrantedWithLease { .. }
    ));
    check_invariants(&h.state);
}

#[test]
fn a_busy_lock_makes_no_lease() {
    let mut h = Harness::new();
    let Response::GrantedWithLease { .. } = h.reply(take("res", "a", 5_000)) else {
        panic!("first take");
    };
    let before = h.state.to_parts();
    let (reply, changes) = h.run(take("res", "b", 5_000));
    assert_eq!(reply, Response::Busy);
    assert!(changes.events.is_empty(), "{:?}", changes.events);
    assert_eq!(h.state.to_parts(), before, "a busy take changes nothing");
    check_invariants(&h.state);
}

#[test]
fn a_refused_take_makes_no_lease() {
    let mut h = Harness::new();
    let before = h.state.to_parts();
    for command in [
        take("res", "a", 0),
        take("", "a", 100),
        take("res", "", 100),
    ] {
        let (reply, changes) = h.run(command);
        assert!(matches!(reply, Response::Rejected(_)), "{reply:?}");
        assert!(changes.events.is_empty());
    }
    let l = h.lease();
    h.reply(acquire("kind", "x", l, Mode::Shared, false));
    let before_kind = h.state.to_parts();
    // A lock held shared cannot be taken exclusive with its own TTL.
    assert_eq!(h.reply(take("kind", "y", 100)), Response::Busy);
    assert_eq!(h.state.to_parts(), before_kind);
    assert_ne!(before, before_kind);
}
