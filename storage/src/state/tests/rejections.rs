//! Every bad input is refused and changes nothing but the reply table.

use uuid::Uuid;

use super::*;
use crate::command::{Acquire, GrantLease, Proclaim, RevokeLease, SetLeaseTtl};
use crate::limits::{
    MAX_LEASES, MAX_NAME_LEN, MAX_OWNER_LEN, MAX_SEMAPHORE_LIMIT, MAX_TTL_MS, MAX_VALUE_LEN,
    MAX_WAITERS_PER_LOCK, MIN_TTL_MS,
};
use crate::state::ClientSession;

/// Applies `command` and asserts it was refused without any effect.
fn assert_refused(h: &mut Harness, command: Command) -> CommandError {
    let before = h.state.clone();
    let (reply, changes) = h.run(command.clone());
    let Response::Rejected(error) = reply else {
        panic!("{command:?} was not refused: {reply:?}");
    };
    assert_eq!(h.state, before, "{command:?} changed the state");
    assert!(
        changes.events.is_empty(),
        "{command:?}: {:?}",
        changes.events
    );
    error
}

/// A lease, a held mutex with a waiter, a read lock and a semaphore.
fn populated() -> (Harness, LeaseId, LeaseId) {
    let mut h = Harness::new();
    let l = h.lease();
    let other = h.lease();
    h.reply(acquire("m", "a", l, Mode::Exclusive, true));
    h.reply(acquire("m", "b", l, Mode::Exclusive, true));
    h.reply(acquire("rw", "r", l, Mode::Shared, true));
    h.reply(acquire("s", "p", l, permits(2, 3), true));
    (h, l, other)
}

fn invalid(error: &CommandError) -> bool {
    matches!(error, CommandError::InvalidArgument(_))
}

fn conflict(error: &CommandError) -> bool {
    matches!(error, CommandError::Conflict { .. })
}

#[test]
fn bad_ttls_and_unknown_leases() {
    let (mut h, l, _) = populated();
    for ttl_ms in [0, MIN_TTL_MS - 1, MAX_TTL_MS + 1, u64::MAX] {
        assert!(invalid(&assert_refused(
            &mut h,
            Command::GrantLease(GrantLease { ttl_ms })
        )));
    }
    for ttl_ms in [0, MAX_TTL_MS + 1, u64::MAX] {
        assert!(invalid(&assert_refused(
            &mut h,
            Command::SetLeaseTtl(SetLeaseTtl { id: l, ttl_ms })
        )));
    }
    assert_eq!(
        assert_refused(
            &mut h,
            Command::SetLeaseTtl(SetLeaseTtl { id: 999, ttl_ms: 5 })
        ),
        CommandError::LeaseNotFound(999)
    );
    assert_eq!(
        h.reply(Command::SetLeaseTtl(SetLeaseTtl { id: l, ttl_ms: 7 })),
        Response::LeaseTtlSet { id: l, ttl_ms: 7 }
    );
    assert_eq!(
        assert_refused(&mut h, Command::RevokeLease(RevokeLease { id: 999 })),
        CommandError::LeaseNotFound(999)
    );
    let e = assert_refused(&mut h, acquire("m2", "a", 999, Mode::Exclusive, true));
    assert_eq!(e, CommandError::LeaseNotFound(999));
    assert!(matches!(
        h.reply(Command::GrantLease(GrantLease { ttl_ms: MIN_TTL_MS })),
        Response::LeaseGranted { .. }
    ));
    assert!(matches!(
        h.reply(Command::GrantLease(GrantLease { ttl_ms: MAX_TTL_MS })),
        Response::LeaseGranted { .. }
    ));
    h.reply(Command::RevokeLease(RevokeLease { id: l }));
    assert_eq!(
        assert_refused(&mut h, acquire("x", "a", l, Mode::Exclusive, true)),
        CommandError::LeaseNotFound(l)
    );
}

#[test]
fn bad_names_owners_values_and_modes() {
    let (mut h, l, _) = populated();
    let long_name = "n".repeat(MAX_NAME_LEN + 1);
    let long_owner = "o".repeat(MAX_OWNER_LEN + 1);
    for (name, owner) in [
        ("", "a"),
        (long_name.as_str(), "a"),
        ("x", ""),
        ("x", long_owner.as_str()),
    ] {
        assert!(invalid(&assert_refused(
            &mut h,
            acquire(name, owner, l, Mode::Exclusive, true)
        )));
    }
    let big = Command::Acquire(Acquire {
        name: "e".into(),
        owner: "a".into(),
        lease: l,
        mode: Mode::Exclusive,
        wait: true,
        value: Some(vec![0; MAX_VALUE_LEN + 1]),
        lock_delay_ms: 0,
    });
    assert!(invalid(&assert_refused(&mut h, big)));
    for mode in [
        permits(0, 3),
        permits(4, 3),
        permits(1, MAX_SEMAPHORE_LIMIT + 1),
        permits(0, 0),
    ] {
        assert!(invalid(&assert_refused(
            &mut h,
            acquire("s2", "a", l, mode, true)
        )));
    }
    let proclaim = |owner: &str, len: usize| {
        Command::Proclaim(Proclaim {
            name: "m".into(),
            owner: owner.into(),
            value: vec![1; len],
        })
    };
    assert!(invalid(&assert_refused(
        &mut h,
        proclaim("a", MAX_VALUE_LEN + 1)
    )));
    assert!(matches!(
        assert_refused(&mut h, proclaim("b", 1)),
        CommandError::NotHolder { .. }
    ));
    assert!(matches!(
        h.reply(proclaim("a", MAX_VALUE_LEN)),
        Response::Proclaimed
    ));
    // The longest allowed name and owner are fine.
    let name = "n".repeat(MAX_NAME_LEN);
    let owner = "o".repeat(MAX_OWNER_LEN);
    assert!(matches!(
        h.reply(acquire(&name, &owner, l, Mode::Exclusive, true)),
        Response::Granted { .. }
    ));
}

#[test]
fn kind_and_mode_conflicts() {
    let (mut h, l, other) = populated();
    let cases = [
        acquire("m", "z", l, permits(1, 3), true),
        acquire("s", "z", l, Mode::Exclusive, true),
        acquire("s", "z", l, Mode::Shared, true),
        acquire("s", "z", l, permits(1, 4), true),
        // Re-entry needs the same lease and mode.
        acquire("m", "a", other, Mode::Exclusive, true),
        acquire("rw", "r", l, Mode::Exclusive, true),
        acquire("s", "p", l, permits(1, 3), true),
        // So does asking again while queued.
        acquire("m", "b", other, Mode::Exclusive, true),
        acquire("m", "b", l, Mode::Shared, true),
    ];
    for command in cases {
        assert!(conflict(&assert_refused(&mut h, command)));
    }
}

#[test]
fn releases_and_proclaims_by_non_holders() {
    let (mut h, _, _) = populated();
    for (name, owner) in [("m", "b"), ("m", "zz"), ("none", "a")] {
        let e = assert_refused(&mut h, release(name, owner));
        assert_eq!(
            e,
            CommandError::NotHolder {
                name: name.into(),
                owner: owner.into()
            }
        );
    }
    // Out of bounds is refused as such, before anyone's hold is looked at.
    let e = assert_refused(&mut h, release("", ""));
    assert!(matches!(e, CommandError::InvalidArgument(_)), "{e:?}");
}

#[test]
fn too_many_waiters() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("m", "holder", l, Mode::Exclusive, true));
    let mut changes = Changes::default();
    for i in 0..MAX_WAITERS_PER_LOCK {
        let request = Request {
            origin: None,
            caller: Default::default(),
            time_ms: 0,
            command: acquire("m", &format!("w{i}"), l, Mode::Exclusive, true),
        };
        h.index += 1;
        h.state.apply(h.index, &request, &h.quotas, &mut changes);
    }
    assert_eq!(h.waiters("m").len(), MAX_WAITERS_PER_LOCK);
    let e = assert_refused(&mut h, acquire("m", "late", l, Mode::Exclusive, true));
    assert_eq!(
        e,
        CommandError::TooManyWaiters {
            name: "m".into(),
            limit: MAX_WAITERS_PER_LOCK
        }
    );
    assert_eq!(
        h.reply(acquire("m", "late", l, Mode::Exclusive, false)),
        Response::Busy
    );
}

#[test]
fn too_many_leases() {
    let mut h = Harness::with_leases(MAX_LEASES as u64, None);
    let before = h.state.clone();
    let mut changes = Changes::default();
    let request = Request {
        origin: None,
        caller: Default::default(),
        time_ms: 0,
        command: Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    };
    let reply = h
        .state
        .apply(h.index + 1, &request, &h.quotas, &mut changes);
    assert_eq!(
        reply,
        Response::Rejected(CommandError::TooManyLeases(MAX_LEASES))
    );
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "a refused grant changed the state");
}

#[test]
fn reentry_overflow() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("m", "a", l, Mode::Exclusive, true));
    let mut parts = h.state.to_parts();
    parts.locks[0].holders[0].count = u32::MAX;
    h.state = LockState::from_parts(parts);
    assert!(invalid(&assert_refused(
        &mut h,
        acquire("m", "a", l, Mode::Exclusive, true)
    )));
}

#[test]
fn a_refused_client_request_only_records_its_reply() {
    let (mut h, _, _) = populated();
    let c = Uuid::from_u128(9);
    let mut expected = h.state.to_parts();
    let origin = ClientSeq {
        client: c,
        seq: 0,
        acked_below: 0,
        attempt: 0,
        anonymous: false,
    };
    let (reply, changes) = h.run_as(origin, release("m", "b"));
    assert!(matches!(
        reply,
        Response::Rejected(CommandError::NotHolder { .. })
    ));
    assert!(changes.events.is_empty());
    // Nothing but a new session holding the refusal.
    let session = ClientSession {
        replies: [(0, stored(&release("m", "b"), reply))].into(),
        forgotten_below: 0,
        last_index: h.index,
    };
    set_session(&mut expected, c, Some(session));
    assert_eq!(h.state.to_parts(), expected);
}

/// Each command a caller fills in, with one field out of bounds, is
/// refused by `Command::check` (what the server's edge asks) and by the
/// state machine, which changes nothing: the two are one check.
#[test]
fn every_field_out_of_bounds_is_refused_by_check_and_by_apply() {
    use crate::command::{
        AcquireWithTtl, Cancel, ClaimFire, ForceRelease, Hold, Lead, ReadWrite, Release, Unhold,
    };
    use crate::ReadWriteOp;
    let (mut h, l, _) = populated();
    let long_name = "n".repeat(MAX_NAME_LEN + 1);
    let long_owner = "o".repeat(MAX_OWNER_LEN + 1);
    let hold = |name: &str, owner: &str, ttl_ms| {
        Command::Hold(Hold {
            name: name.into(),
            owner: owner.into(),
            ttl_ms,
        })
    };
    let bad = vec![
        Command::GrantLease(GrantLease { ttl_ms: 0 }),
        Command::SetLeaseTtl(SetLeaseTtl {
            id: l,
            ttl_ms: MAX_TTL_MS + 1,
        }),
        acquire("", "a", l, Mode::Exclusive, true),
        acquire(&long_name, "a", l, Mode::Exclusive, true),
        acquire("m", "", l, Mode::Exclusive, true),
        acquire("m", &long_owner, l, Mode::Exclusive, true),
        acquire("s", "p", l, permits(0, 3), true),
        acquire("s", "p", l, permits(4, 3), true),
        acquire("s", "p", l, permits(1, MAX_SEMAPHORE_LIMIT + 1), true),
        Command::Acquire(Acquire {
            lock_delay_ms: crate::limits::MAX_LOCK_DELAY_MS + 1,
            ..acquire_struct("m", "a", l)
        }),
        Command::Acquire(Acquire {
            value: Some(vec![0; MAX_VALUE_LEN + 1]),
            ..acquire_struct("e", "a", l)
        }),
        Command::AcquireWithTtl(AcquireWithTtl {
            name: "t".into(),
            owner: "a".into(),
            ttl_ms: 0,
            mode: Mode::Exclusive,
            lock_delay_ms: 0,
        }),
        Command::Release(Release {
            name: String::new(),
            owner: "a".into(),
        }),
        Command::Cancel(Cancel {
            name: "m".into(),
            owner: long_owner.clone(),
            call: None,
        }),
        Command::ForceRelease(ForceRelease {
            name: long_name.clone(),
        }),
        Command::Proclaim(Proclaim {
            name: "m".into(),
            owner: "a".into(),
            value: vec![0; MAX_VALUE_LEN + 1],
        }),
        hold("h", "a", 0),
        hold("", "a", 1_000),
        Command::Unhold(Unhold {
            name: "h".into(),
            owner: String::new(),
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw2".into(),
            owner: "a".into(),
            op: ReadWriteOp::Write {
                ttl_ms: MAX_TTL_MS + 1,
                intent: false,
            },
        }),
        Command::Lead(Lead {
            name: "el".into(),
            owner: "a".into(),
            ttl_ms: 1_000,
            metadata: vec![("k".into(), "1".into()), ("k".into(), "2".into())],
        }),
        Command::ClaimFire(ClaimFire {
            name: "cron".into(),
            due: f64::NAN.to_bits(),
        }),
    ];
    for command in bad {
        let checked = command.check();
        assert!(
            matches!(checked, Err(CommandError::InvalidArgument(_))),
            "{command:?}: {checked:?}"
        );
        let applied = assert_refused(&mut h, command.clone());
        assert_eq!(Err(applied), checked, "{command:?}");
    }
}

fn acquire_struct(name: &str, owner: &str, lease: LeaseId) -> Acquire {
    Acquire {
        name: name.into(),
        owner: owner.into(),
        lease,
        mode: Mode::Exclusive,
        wait: false,
        value: None,
        lock_delay_ms: 0,
    }
}
