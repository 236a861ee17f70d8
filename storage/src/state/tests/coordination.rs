//! Holds found by their owner on leases of their own, read-write locks with
//! intents, generations and poisoning, election records and schedule
//! fires: what grelmicro's coordination backends ask of the store.

use super::*;
use crate::command::{Caller, ReadWriteOp, ReadWriteOutcome};
use crate::command::{ClaimFire, ExpireLeases, Hold, Lead, ReadWrite, Unhold};
use crate::limits::Quota;
use crate::state::ElectionRecord;

fn hold(name: &str, owner: &str, ttl_ms: u64) -> Command {
    Command::Hold(Hold {
        name: name.into(),
        owner: owner.into(),
        ttl_ms,
    })
}

fn rw(name: &str, owner: &str, op: ReadWriteOp) -> Command {
    Command::ReadWrite(ReadWrite {
        name: name.into(),
        owner: owner.into(),
        op,
    })
}

fn read(h: &mut Harness, owner: &str) -> Option<u64> {
    match h.reply(rw("rw", owner, ReadWriteOp::Read { ttl_ms: 5_000 })) {
        Response::ReadWrite(ReadWriteOutcome::Read { generation }) => generation,
        other => panic!("read: {other:?}"),
    }
}

fn write(h: &mut Harness, owner: &str, intent: bool) -> Option<(u64, bool)> {
    let op = ReadWriteOp::Write {
        ttl_ms: 5_000,
        intent,
    };
    match h.reply(rw("rw", owner, op)) {
        Response::ReadWrite(ReadWriteOutcome::Write { granted }) => granted,
        other => panic!("write: {other:?}"),
    }
}

fn ended(h: &mut Harness, owner: &str, op: ReadWriteOp) -> bool {
    match h.reply(rw("rw", owner, op)) {
        Response::ReadWrite(ReadWriteOutcome::Ended { ended }) => ended,
        other => panic!("{op:?}: {other:?}"),
    }
}

fn lead(name: &str, owner: &str, metadata: &[(&str, &str)]) -> Command {
    Command::Lead(Lead {
        name: name.into(),
        owner: owner.into(),
        ttl_ms: 5_000,
        metadata: metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    })
}

fn led(h: &mut Harness, command: Command) -> ElectionRecord {
    match h.reply(command) {
        Response::Led(record) => record,
        other => panic!("lead: {other:?}"),
    }
}

fn claim(name: &str, due: f64) -> Command {
    Command::ClaimFire(ClaimFire {
        name: name.into(),
        due: due.to_bits(),
    })
}

fn won(h: &mut Harness, name: &str, due: f64) -> bool {
    match h.reply(claim(name, due)) {
        Response::FireClaimed { won } => won,
        other => panic!("claim: {other:?}"),
    }
}

/// The lease of `owner`'s hold on `name`.
fn lease_of(h: &Harness, name: &str, owner: &str) -> LeaseId {
    let lock = h.state.lock(name).expect("lock exists");
    lock.holder(owner).expect("owner holds").lease
}

#[test]
fn a_hold_is_renewed_by_its_owner_and_keeps_its_fence() {
    let mut h = Harness::new();
    let Response::Held { lease, fence } = h.reply(hold("job", "a", 1_000)) else {
        panic!("first hold");
    };
    // Renewing sets the lease's TTL; the hold and its fence stay.
    assert_eq!(
        h.reply(hold("job", "a", 7_000)),
        Response::Held { lease, fence }
    );
    assert_eq!(h.state.lease(lease).map(|l| l.ttl_ms), Some(7_000));
    assert_eq!(h.reply(hold("job", "b", 1_000)), Response::Busy);
    // Its lease ends it; the next owner's fence is higher.
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![lease] }));
    let Response::Held { fence: next, .. } = h.reply(hold("job", "b", 1_000)) else {
        panic!("take over");
    };
    assert!(next > fence);
}

#[test]
fn unhold_ends_the_owners_hold_and_its_lease_only() {
    let mut h = Harness::new();
    h.reply(hold("job", "a", 1_000));
    let lease = lease_of(&h, "job", "a");
    let unhold = |owner: &str| {
        Command::Unhold(Unhold {
            name: "job".into(),
            owner: owner.into(),
        })
    };
    assert_eq!(h.reply(unhold("b")), Response::Unheld { ended: false });
    assert_eq!(h.holders("job"), vec!["a"]);
    assert_eq!(h.reply(unhold("a")), Response::Unheld { ended: true });
    assert!(h.state.lock("job").is_none());
    assert!(h.state.lease(lease).is_none(), "its lease went with it");
    assert_eq!(h.reply(unhold("a")), Response::Unheld { ended: false });
}

#[test]
fn a_hold_through_a_shared_lease_is_neither_renewed_nor_ended_here() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("job", "a", l, Mode::Exclusive, false));
    h.reply(acquire("other", "a", l, Mode::Exclusive, false));
    let before = h.state.to_parts();
    for command in [
        hold("job", "a", 1_000),
        Command::Unhold(Unhold {
            name: "job".into(),
            owner: "a".into(),
        }),
    ] {
        let reply = h.reply(command);
        assert!(
            matches!(reply, Response::Rejected(CommandError::Conflict { .. })),
            "{reply:?}"
        );
    }
    assert_eq!(h.state.to_parts(), before);
}

#[test]
fn readers_share_and_a_writer_waits_with_an_intent_that_keeps_new_readers_out() {
    let mut h = Harness::new();
    assert_eq!(read(&mut h, "r1"), Some(0), "never written: generation 0");
    assert_eq!(read(&mut h, "r2"), Some(0));
    assert_eq!(write(&mut h, "w", true), None, "readers hold it");
    let state = h.state.read_write_state("rw");
    assert_eq!((state.readers, state.waiting_writers), (2, 1));
    assert!(!state.writing);
    // The intent keeps a new reader out; a reader already in renews.
    assert_eq!(read(&mut h, "r3"), None);
    assert_eq!(read(&mut h, "r1"), Some(0));
    assert!(ended(&mut h, "r1", ReadWriteOp::ReleaseRead));
    assert!(ended(&mut h, "r2", ReadWriteOp::ReleaseRead));
    assert!(!ended(&mut h, "r2", ReadWriteOp::ReleaseRead));
    let (fence, poisoned) = write(&mut h, "w", true).expect("free now");
    assert!(!poisoned);
    let state = h.state.read_write_state("rw");
    assert_eq!(state.generation, fence);
    assert_eq!((state.writing, state.waiting_writers), (true, 0));
    // Renewing keeps the fence; readers wait for the writer.
    assert_eq!(write(&mut h, "w", true), Some((fence, false)));
    assert_eq!(read(&mut h, "r3"), None);
    assert!(ended(&mut h, "w", ReadWriteOp::ReleaseWrite));
    assert_eq!(
        read(&mut h, "r3"),
        Some(fence),
        "readers see the generation"
    );
}

#[test]
fn an_intent_ends_when_cancelled_or_when_its_lease_does() {
    let mut h = Harness::new();
    read(&mut h, "r1");
    assert_eq!(write(&mut h, "w", true), None);
    assert_eq!(read(&mut h, "r2"), None);
    assert!(ended(&mut h, "w", ReadWriteOp::CancelIntent));
    assert!(!ended(&mut h, "w", ReadWriteOp::CancelIntent));
    assert_eq!(read(&mut h, "r2"), Some(0));
    // A try without intent leaves none.
    assert_eq!(write(&mut h, "w2", false), None);
    assert_eq!(h.state.read_write_state("rw").waiting_writers, 0);
    // An intent whose lease expires keeps nobody out.
    assert_eq!(write(&mut h, "w3", true), None);
    let record = h.state.to_parts().named.read_write;
    let intent = record[0].1.record.intents[0].lease;
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![intent] }));
    assert_eq!(h.state.read_write_state("rw").waiting_writers, 0);
    assert_eq!(read(&mut h, "r4"), Some(0));
}

#[test]
fn a_writer_whose_lease_expired_poisons_the_next_write_grant_only() {
    let mut h = Harness::new();
    let (first, _) = write(&mut h, "w1", true).expect("free");
    let lease = lease_of(&h, "rw", "w1");
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![lease] }));
    let (second, poisoned) = write(&mut h, "w2", true).expect("free again");
    assert!(poisoned, "w1 never released");
    assert!(second > first);
    assert!(ended(&mut h, "w2", ReadWriteOp::ReleaseWrite));
    assert_eq!(write(&mut h, "w3", true).map(|g| g.1), Some(false));
}

#[test]
fn downgrade_turns_the_write_hold_into_a_read_hold_with_no_writer_between() {
    let mut h = Harness::new();
    let (fence, _) = write(&mut h, "w", true).expect("free");
    let lease = lease_of(&h, "rw", "w");
    let op = ReadWriteOp::Downgrade { ttl_ms: 9_000 };
    assert_eq!(
        h.reply(rw("rw", "other", op)),
        Response::ReadWrite(ReadWriteOutcome::Read { generation: None })
    );
    assert_eq!(
        h.reply(rw("rw", "w", op)),
        Response::ReadWrite(ReadWriteOutcome::Read {
            generation: Some(fence)
        })
    );
    let holder = h.state.lock("rw").and_then(|l| l.holder("w")).cloned();
    let holder = holder.expect("still holds");
    assert_eq!(
        (holder.mode, holder.fence, holder.lease),
        (Mode::Shared, fence, lease)
    );
    assert_eq!(h.state.lease(lease).map(|l| l.ttl_ms), Some(9_000));
    assert_eq!(read(&mut h, "r"), Some(fence), "readers join");
    assert_eq!(write(&mut h, "w2", false), None, "no writer while it reads");
    // Downgrading is a clean end of the write: no poison after.
    assert!(ended(&mut h, "w", ReadWriteOp::ReleaseRead));
    assert!(ended(&mut h, "r", ReadWriteOp::ReleaseRead));
    assert_eq!(write(&mut h, "w2", false).map(|g| g.1), Some(false));
}

#[test]
fn an_election_record_counts_transitions_and_keeps_acquired_at_across_renewals() {
    let mut h = Harness::new();
    let first = led(&mut h, lead("e", "a", &[("pod", "a-0")]));
    assert_eq!(first.holder, "a");
    assert_eq!(first.transitions, 0);
    assert_eq!(first.acquired_at_ms, first.renewed_at_ms);
    assert_eq!(first.metadata, vec![("pod".to_string(), "a-0".to_string())]);
    let renewed = led(&mut h, lead("e", "a", &[]));
    assert_eq!(renewed.acquired_at_ms, first.acquired_at_ms);
    assert!(renewed.renewed_at_ms > first.renewed_at_ms);
    assert!(renewed.metadata.is_empty());
    // Another owner is told who leads, and changes nothing.
    assert_eq!(led(&mut h, lead("e", "b", &[])), renewed);
    assert_eq!(h.state.election("e"), Some(renewed.clone()));
    // The leader's lease ends: nobody leads, the record stays for the count.
    let lease = lease_of(&h, "e", "a");
    h.reply(Command::ExpireLeases(ExpireLeases { ids: vec![lease] }));
    assert_eq!(h.state.election("e"), None);
    let taken = led(&mut h, lead("e", "b", &[]));
    assert_eq!((taken.holder.as_str(), taken.transitions), ("b", 1));
    // Releasing drops the record.
    let unhold = Command::Unhold(Unhold {
        name: "e".into(),
        owner: "b".into(),
    });
    assert_eq!(h.reply(unhold), Response::Unheld { ended: true });
    assert_eq!(h.state.election("e"), None);
    assert_eq!(led(&mut h, lead("e", "c", &[])).transitions, 0);
}

#[test]
fn bad_metadata_is_refused_and_changes_nothing() {
    let mut h = Harness::new();
    let before = h.state.to_parts();
    let long = "x".repeat(5_000);
    for metadata in [
        vec![("k", "1"), ("k", "2")],
        vec![("", "v")],
        vec![("k", long.as_str())],
    ] {
        let (reply, changes) = h.run(lead("e", "a", &metadata));
        assert!(
            matches!(reply, Response::Rejected(CommandError::InvalidArgument(_))),
            "{reply:?}"
        );
        assert!(changes.events.is_empty());
    }
    assert_eq!(h.state.to_parts(), before);
}

#[test]
fn one_claim_wins_each_fire_and_later_fires_only() {
    let mut h = Harness::new();
    assert_eq!(h.state.last_fired("cron"), None);
    assert!(won(&mut h, "cron", 60.0));
    assert!(!won(&mut h, "cron", 60.0), "the same fire twice");
    assert!(!won(&mut h, "cron", 30.5), "an earlier fire");
    assert!(won(&mut h, "cron", 120.25));
    assert_eq!(h.state.last_fired("cron"), Some(120.25));
    let before = h.state.to_parts();
    for due in [f64::NAN, f64::INFINITY, -1.0, -0.0] {
        let reply = h.reply(claim("cron", due));
        assert!(
            matches!(reply, Response::Rejected(CommandError::InvalidArgument(_))),
            "{due}: {reply:?}"
        );
    }
    assert_eq!(h.state.to_parts(), before);
}

#[test]
fn named_records_are_bounded_per_account_and_a_refusal_changes_nothing() {
    let mut h = Harness::new();
    h.quotas.leases = 2;
    let caller = Caller {
        source: Some([10, 0, 0, 1].into()),
        ..Caller::default()
    };
    let as_caller = |h: &mut Harness, command| {
        h.run_request(Request {
            origin: None,
            caller: caller.clone(),
            time_ms: 5,
            command,
        })
        .0
    };
    assert_eq!(
        as_caller(&mut h, claim("a", 1.0)),
        Response::FireClaimed { won: true }
    );
    assert_eq!(
        as_caller(&mut h, claim("b", 1.0)),
        Response::FireClaimed { won: true }
    );
    // Claims on names it has need no new record.
    assert_eq!(
        as_caller(&mut h, claim("a", 2.0)),
        Response::FireClaimed { won: true }
    );
    let before = h.state.to_parts();
    let refused = as_caller(&mut h, claim("c", 1.0));
    let Response::Rejected(CommandError::QuotaExceeded { quota, count, .. }) = refused else {
        panic!("{refused:?}");
    };
    assert_eq!((quota, count), (Quota::Records, 2));
    let refused = as_caller(&mut h, lead("e", "x", &[]));
    assert!(matches!(refused, Response::Rejected(_)), "{refused:?}");
    assert_eq!(h.state.to_parts(), before);
    // Another account is not held back by it.
    assert_eq!(
        h.reply(claim("c", 1.0)),
        Response::FireClaimed { won: true }
    );
}

#[test]
fn another_identity_cannot_renew_end_or_cancel_what_an_owner_token_holds() {
    let mut h = Harness::new();
    let as_identity = |h: &mut Harness, identity: &str, command| {
        h.run_request(Request {
            origin: None,
            caller: Caller {
                identity: Some(identity.into()),
                ..Caller::default()
            },
            time_ms: 5,
            command,
        })
        .0
    };
    as_identity(&mut h, "alice", hold("job", "tok", 1_000));
    as_identity(
        &mut h,
        "alice",
        rw("rw", "r", ReadWriteOp::Read { ttl_ms: 1_000 }),
    );
    let write = ReadWriteOp::Write {
        ttl_ms: 1_000,
        intent: true,
    };
    as_identity(&mut h, "alice", rw("rw", "w", write));
    let before = h.state.to_parts();
    for command in [
        hold("job", "tok", 9_000),
        Command::Unhold(Unhold {
            name: "job".into(),
            owner: "tok".into(),
        }),
        rw("rw", "w", ReadWriteOp::CancelIntent),
        rw("rw", "r", ReadWriteOp::ReleaseRead),
    ] {
        let reply = as_identity(&mut h, "mallory", command);
        assert!(
            matches!(reply, Response::Rejected(CommandError::PermissionDenied(_))),
            "{reply:?}"
        );
    }
    assert_eq!(h.state.to_parts(), before);
}

#[test]
fn named_records_survive_a_rebuild_from_parts() {
    let mut h = Harness::new();
    led(&mut h, lead("e", "a", &[("k", "v")]));
    won(&mut h, "cron", 3.5);
    read(&mut h, "r");
    write(&mut h, "w", true);
    let parts = h.state.to_parts();
    assert_eq!(parts.named.elections.len(), 1);
    assert_eq!(parts.named.schedules.len(), 1);
    assert_eq!(parts.named.read_write.len(), 1);
    let rebuilt = LockState::from_parts(parts);
    assert_eq!(rebuilt, h.state);
    // The intent index came back too: cancelling ends the intent's lease.
    h.state = rebuilt;
    assert!(ended(&mut h, "w", ReadWriteOp::CancelIntent));
    assert_eq!(h.state.read_write_state("rw").waiting_writers, 0);
}
