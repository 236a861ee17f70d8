//! Granting, revoking and expiring leases, and what that does to locks.

use super::*;
use crate::command::{ExpireLeases, GrantLease, RevokeLease};
use crate::event::EndReason;

#[test]
fn a_lease_id_is_its_entry_index() {
    let mut h = Harness::new();
    h.run(Command::ExpireLeases(ExpireLeases { ids: vec![] }));
    let (reply, changes) = h.run(Command::GrantLease(GrantLease { ttl_ms: 5_000 }));
    assert_eq!(
        reply,
        Response::LeaseGranted {
            id: 2,
            ttl_ms: 5_000
        }
    );
    assert_eq!(
        changes.events,
        vec![Event::LeaseGranted {
            id: 2,
            ttl_ms: 5_000
        }]
    );
    let lease = h.state.lease(2).cloned();
    assert_eq!(
        lease.map(|l| (l.ttl_ms, l.granted_at_ms)),
        Some((5_000, 1_001))
    );
    h.lease();
    let ids: Vec<_> = h.state.leases().map(|l| l.id).collect();
    assert_eq!(ids, [2, 3]);
}

#[test]
fn revoke_releases_everything_of_the_lease_and_grants_next_waiters_in_the_same_step() {
    let mut h = Harness::new();
    let dying = h.lease();
    let other = h.lease();
    h.reply(acquire("a", "x", dying, Mode::Exclusive, true));
    h.reply(acquire("b", "x", dying, Mode::Shared, true));
    h.reply(acquire("b", "y", dying, Mode::Shared, true));
    h.reply(acquire("c", "z", other, Mode::Exclusive, true));
    h.reply(acquire("c", "x", dying, Mode::Exclusive, true));
    h.reply(acquire("a", "w", other, Mode::Exclusive, true));
    h.reply(acquire("b", "w", other, Mode::Exclusive, true));
    assert_eq!(h.state.lease_attachments(dying).len(), 4);

    let (reply, changes) = h.run(Command::RevokeLease(RevokeLease { id: dying }));
    assert_eq!(
        reply,
        Response::LeaseRevoked {
            id: dying,
            released: 3
        }
    );
    assert_eq!(
        grants(&changes),
        vec![("a".into(), "w".into()), ("b".into(), "w".into())]
    );
    let waits_ended = changes
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::WaitEnded {
                    reason: EndReason::LeaseRevoked,
                    ..
                }
            )
        })
        .count();
    assert_eq!(waits_ended, 1);
    assert_eq!(
        changes.events.last(),
        Some(&Event::LeaseEnded {
            id: dying,
            reason: EndReason::LeaseRevoked
        })
    );
    assert!(h.state.lease(dying).is_none());
    assert!(h.state.lease_attachments(dying).is_empty());
    assert_eq!(h.waiters("c"), Vec::<String>::new());
    for (name, holder) in [("a", "w"), ("b", "w"), ("c", "z")] {
        assert_eq!(h.holders(name), [holder], "{name}");
        assert!(h.waiters(name).is_empty(), "{name}");
    }
    let live: Vec<_> = h.state.leases().map(|l| l.id).collect();
    assert_eq!(live, [other], "only the revoked lease ended");
    assert_eq!(
        h.state.lease_attachments(other),
        [("a", true), ("b", true), ("c", true)].map(|(n, held)| {
            let owner = if n == "c" { "z" } else { "w" };
            (n.to_owned(), owner.to_owned(), held)
        })
    );
}

#[test]
fn expiry_hands_the_lock_on_in_fifo_order() {
    let mut h = Harness::new();
    let (l1, l2, l3) = (h.lease(), h.lease(), h.lease());
    h.reply(acquire("m", "a", l1, Mode::Exclusive, true));
    h.reply(acquire("m", "b", l2, Mode::Exclusive, true));
    h.reply(acquire("m", "c", l3, Mode::Exclusive, true));
    let (reply, changes) = h.run(Command::ExpireLeases(ExpireLeases {
        ids: vec![l1, 999, l1],
    }));
    assert_eq!(reply, Response::LeasesExpired { ids: vec![l1] });
    assert_eq!(grants(&changes), vec![("m".into(), "b".into())]);
    assert!(changes.events.contains(&Event::HoldEnded {
        name: "m".into(),
        owner: "a".into(),
        fence: 4,
        reason: EndReason::LeaseExpired
    }));
    assert_eq!(h.waiters("m"), ["c"]);

    let before = h.state.clone();
    let (reply, changes) = h.run(Command::ExpireLeases(ExpireLeases { ids: vec![l1] }));
    assert_eq!(reply, Response::LeasesExpired { ids: vec![] });
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "expiring an ended lease changed the state");
}

#[test]
fn expiring_a_holder_and_the_next_waiter_together_skips_the_waiter() {
    let mut h = Harness::new();
    let (l1, l2, l3) = (h.lease(), h.lease(), h.lease());
    h.reply(acquire("m", "a", l1, Mode::Exclusive, true));
    h.reply(acquire("m", "b", l2, Mode::Exclusive, true));
    h.reply(acquire("m", "c", l3, Mode::Exclusive, true));
    let (reply, changes) = h.run(Command::ExpireLeases(ExpireLeases { ids: vec![l2, l1] }));
    assert_eq!(reply, Response::LeasesExpired { ids: vec![l2, l1] });
    assert_eq!(grants(&changes), vec![("m".into(), "c".into())]);
    assert_eq!(h.holders("m"), ["c"]);
}

#[test]
fn revoking_an_unknown_lease_is_refused() {
    let mut h = Harness::new();
    // A lease a wrong revoke could end.
    h.lease();
    let before = h.state.clone();
    let (reply, changes) = h.run(Command::RevokeLease(RevokeLease { id: 7 }));
    assert_eq!(reply, Response::Rejected(CommandError::LeaseNotFound(7)));
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "a refused revoke changed the state");
}

#[test]
fn lease_attachments_show_holds_and_waits() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("b", "o1", l, Mode::Exclusive, true));
    h.reply(acquire("a", "o2", l, Mode::Exclusive, true));
    h.reply(acquire("a", "o3", l, Mode::Exclusive, true));
    assert_eq!(
        h.state.lease_attachments(l),
        [("a", "o2", true), ("a", "o3", false), ("b", "o1", true)].map(|(n, o, held)| (
            n.into(),
            o.into(),
            held
        ))
    );
}
