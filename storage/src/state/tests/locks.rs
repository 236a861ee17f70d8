//! Mutex, read-write lock, semaphore, cancel, force release and elections.

use super::*;
use crate::command::CancelOutcome;
use crate::command::{Acquire, ExpireLeases, ForceRelease, Proclaim, RevokeLease};
use crate::event::EndReason;

#[test]
fn mutex_grants_in_fifo_order_after_release() {
    let mut h = Harness::new();
    let l = h.lease();
    let (reply, changes) = h.run(acquire("m", "a", l, Mode::Exclusive, true));
    assert_eq!(
        reply,
        Response::Granted {
            fence: h.index,
            count: 1
        }
    );
    assert_eq!(h.holders("m"), ["a"]);
    assert!(changes
        .events
        .contains(&Event::Changed { name: "m".into() }));
    assert_eq!(
        h.reply(acquire("m", "b", l, Mode::Exclusive, true)),
        Response::Queued { position: 0 }
    );
    assert_eq!(
        h.reply(acquire("m", "c", l, Mode::Exclusive, true)),
        Response::Queued { position: 1 }
    );
    let before = h.state.clone();
    let (busy, changes) = h.run(acquire("m", "d", l, Mode::Exclusive, false));
    assert_eq!(busy, Response::Busy);
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "a busy reply changed the state");

    let (reply, changes) = h.run(release("m", "a"));
    assert_eq!(reply, Response::Released { remaining: 0 });
    assert_eq!(grants(&changes), vec![("m".into(), "b".into())]);
    let b_fence = h
        .state
        .lock("m")
        .and_then(|l| l.holder("b"))
        .map(|x| x.fence);
    assert_eq!(
        b_fence,
        Some(h.index),
        "the waiter's fence is the releasing entry's index"
    );
    assert_eq!(
        h.reply(acquire("m", "c", l, Mode::Exclusive, true)),
        Response::Queued { position: 0 }
    );

    h.run(release("m", "b"));
    assert_eq!(h.holders("m"), ["c"]);
    let (_, changes) = h.run(release("m", "c"));
    assert!(
        h.state.lock("m").is_none(),
        "a lock nobody holds or waits for is removed"
    );
    assert!(changes
        .events
        .contains(&Event::Changed { name: "m".into() }));
}

#[test]
fn reentry_counts_and_keeps_the_fence() {
    let mut h = Harness::new();
    let l = h.lease();
    let first = h.reply(acquire("m", "a", l, Mode::Exclusive, false));
    let Response::Granted { fence, count: 1 } = first else {
        panic!("{first:?}")
    };
    for count in 2..=3 {
        let (reply, changes) = h.run(acquire("m", "a", l, Mode::Exclusive, false));
        assert_eq!(reply, Response::Granted { fence, count });
        let held = h.state.lock("m").and_then(|m| m.holder("a"));
        assert_eq!(held.map(|x| (x.count, x.fence)), Some((count, fence)));
        assert!(grants(&changes).is_empty());
    }
    h.reply(acquire("m", "b", l, Mode::Exclusive, true));
    for remaining in [2, 1] {
        assert_eq!(h.reply(release("m", "a")), Response::Released { remaining });
        assert_eq!(h.holders("m"), ["a"]);
    }
    assert_eq!(
        h.reply(release("m", "a")),
        Response::Released { remaining: 0 }
    );
    assert_eq!(h.holders("m"), ["b"]);
    assert!(matches!(
        h.reply(release("m", "a")),
        Response::Rejected(CommandError::NotHolder { .. })
    ));
}

#[test]
fn queued_owner_asking_again_gets_its_position() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("m", "a", l, Mode::Exclusive, true));
    h.reply(acquire("m", "b", l, Mode::Exclusive, true));
    h.reply(acquire("m", "c", l, Mode::Exclusive, true));
    let before = h.state.clone();
    let reply = h.reply(acquire("m", "c", l, Mode::Exclusive, false));
    assert_eq!(reply, Response::Queued { position: 1 });
    assert_eq!(h.state, before, "asking again changed the state");
    h.reply(cancel("m", "b"));
    assert_eq!(
        h.reply(acquire("m", "c", l, Mode::Exclusive, true)),
        Response::Queued { position: 0 }
    );
}

#[test]
fn read_write_lock_readers_share_and_a_queued_writer_blocks_later_readers() {
    let mut h = Harness::new();
    let l = h.lease();
    let r1 = h.reply(acquire("rw", "r1", l, Mode::Shared, true));
    let r2 = h.reply(acquire("rw", "r2", l, Mode::Shared, true));
    assert!(matches!(
        (r1, r2),
        (Response::Granted { .. }, Response::Granted { .. })
    ));
    assert_eq!(
        h.reply(acquire("rw", "w", l, Mode::Exclusive, true)),
        Response::Queued { position: 0 }
    );
    // Strict FIFO: the writer at the head blocks a reader that would fit.
    assert_eq!(
        h.reply(acquire("rw", "r3", l, Mode::Shared, true)),
        Response::Queued { position: 1 }
    );
    assert_eq!(
        h.reply(acquire("rw", "r4", l, Mode::Shared, false)),
        Response::Busy
    );
    h.reply(acquire("rw", "r4", l, Mode::Shared, true));
    h.reply(acquire("rw", "w2", l, Mode::Exclusive, true));

    h.run(release("rw", "r1"));
    assert_eq!(h.holders("rw"), ["r2"]);
    let (_, changes) = h.run(release("rw", "r2"));
    assert_eq!(grants(&changes), vec![("rw".into(), "w".into())]);

    // The writer leaves: both readers are granted in one step, not the writer behind.
    let (_, changes) = h.run(release("rw", "w"));
    assert_eq!(
        grants(&changes),
        vec![("rw".into(), "r3".into()), ("rw".into(), "r4".into())]
    );
    assert_eq!(h.waiters("rw"), ["w2"]);
    let fences: Vec<_> = h
        .state
        .lock("rw")
        .into_iter()
        .flat_map(|l| &l.holders)
        .map(|x| x.fence)
        .collect();
    assert_eq!(fences, [h.index, h.index]);
}

#[test]
fn semaphore_does_not_starve_a_big_request_at_the_head() {
    let mut h = Harness::new();
    let l = h.lease();
    assert!(matches!(
        h.reply(acquire("s", "a", l, permits(3, 5), true)),
        Response::Granted { .. }
    ));
    assert!(matches!(
        h.reply(acquire("s", "b", l, permits(1, 5), true)),
        Response::Granted { .. }
    ));
    assert_eq!(
        h.reply(acquire("s", "c", l, permits(4, 5), true)),
        Response::Queued { position: 0 }
    );
    // One permit is free, but "c" is ahead.
    assert_eq!(
        h.reply(acquire("s", "d", l, permits(1, 5), true)),
        Response::Queued { position: 1 }
    );
    assert_eq!(
        h.reply(acquire("s", "e", l, permits(1, 5), false)),
        Response::Busy
    );

    let (_, changes) = h.run(release("s", "b"));
    assert!(grants(&changes).is_empty(), "c needs 4, only 2 free");
    let (_, changes) = h.run(release("s", "a"));
    assert_eq!(
        grants(&changes),
        vec![("s".into(), "c".into()), ("s".into(), "d".into())]
    );
    assert_eq!(h.state.lock("s").and_then(|s| s.semaphore_limit), Some(5));
}

#[test]
fn cancelling_the_head_waiter_unblocks_the_ones_behind() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("s", "a", l, permits(1, 2), true));
    h.reply(acquire("s", "b", l, permits(2, 2), true));
    h.reply(acquire("s", "c", l, permits(1, 2), true));
    let (reply, changes) = h.run(cancel("s", "b"));
    assert_eq!(
        reply,
        Response::Cancelled {
            outcome: CancelOutcome::Dequeued
        }
    );
    assert_eq!(
        changes.events[0],
        Event::WaitEnded {
            name: "s".into(),
            owner: "b".into(),
            reason: EndReason::Released
        }
    );
    assert_eq!(grants(&changes), vec![("s".into(), "c".into())]);
    assert_eq!(h.holders("s"), ["a", "c"]);
}

#[test]
fn cancelling_a_holder_releases_it_entirely() {
    let mut h = Harness::new();
    let l = h.lease();
    for _ in 0..3 {
        h.reply(acquire("m", "a", l, Mode::Exclusive, true));
    }
    h.reply(acquire("m", "b", l, Mode::Exclusive, true));
    let (reply, changes) = h.run(cancel("m", "a"));
    assert_eq!(
        reply,
        Response::Cancelled {
            outcome: CancelOutcome::Released
        }
    );
    assert!(
        matches!(&changes.events[0], Event::HoldEnded { owner, reason: EndReason::Released, .. } if owner == "a")
    );
    assert_eq!(h.holders("m"), ["b"]);

    let before = h.state.clone();
    let (reply, changes) = h.run(cancel("m", "nobody"));
    assert_eq!(
        reply,
        Response::Cancelled {
            outcome: CancelOutcome::NotFound
        }
    );
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "cancelling a stranger changed the state");
    assert_eq!(
        h.reply(cancel("nope", "a")),
        Response::Cancelled {
            outcome: CancelOutcome::NotFound
        }
    );
}

#[test]
fn force_release_ends_every_hold_and_grants_the_waiters() {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("rw", "r1", l, Mode::Shared, true));
    h.reply(acquire("rw", "r2", l, Mode::Shared, true));
    h.reply(acquire("rw", "w", l, Mode::Exclusive, true));
    let (reply, changes) = h.run(Command::ForceRelease(ForceRelease { name: "rw".into() }));
    assert_eq!(reply, Response::ForceReleased { holders: 2 });
    let ended = changes
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::HoldEnded {
                    reason: EndReason::ForceReleased,
                    ..
                }
            )
        })
        .count();
    assert_eq!(ended, 2);
    assert_eq!(grants(&changes), vec![("rw".into(), "w".into())]);
    assert!(h
        .state
        .lease_attachments(l)
        .contains(&("rw".into(), "w".into(), true)));

    let before = h.state.clone();
    let (reply, changes) = h.run(Command::ForceRelease(ForceRelease {
        name: "unknown".into(),
    }));
    assert_eq!(reply, Response::ForceReleased { holders: 0 });
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "force-releasing no lock changed the state");
}

#[test]
fn elections_publish_the_leaders_value() {
    let mut h = Harness::new();
    let l = h.lease();
    let campaign = |owner: &str, value: &[u8]| {
        Command::Acquire(Acquire {
            name: "e".into(),
            owner: owner.into(),
            lease: l,
            mode: Mode::Exclusive,
            wait: true,
            value: Some(value.to_vec()),
            lock_delay_ms: 0,
        })
    };
    h.reply(campaign("n1", b"addr1"));
    h.reply(campaign("n2", b"addr2"));
    let leader = |h: &Harness| h.state.lock("e").and_then(|e| e.holders.first().cloned());
    assert_eq!(leader(&h).and_then(|x| x.value), Some(b"addr1".to_vec()));

    let proclaim = |owner: &str| {
        Command::Proclaim(Proclaim {
            name: "e".into(),
            owner: owner.into(),
            value: b"new".to_vec(),
        })
    };
    assert!(matches!(
        h.reply(proclaim("n2")),
        Response::Rejected(CommandError::NotHolder { .. })
    ));
    let (reply, changes) = h.run(proclaim("n1"));
    assert_eq!(reply, Response::Proclaimed);
    assert_eq!(changes.events, vec![Event::Changed { name: "e".into() }]);
    assert_eq!(leader(&h).and_then(|x| x.value), Some(b"new".to_vec()));

    h.run(release("e", "n1"));
    let now = leader(&h).map(|x| (x.owner, x.value, x.fence));
    assert_eq!(now, Some(("n2".into(), Some(b"addr2".to_vec()), h.index)));
}

#[test]
fn check_answers_only_for_current_holders() {
    let mut h = Harness::new();
    let l = h.lease();
    let Response::Granted { fence, .. } = h.reply(acquire("m", "a", l, Mode::Exclusive, true))
    else {
        panic!("not granted")
    };
    assert!(h.state.check("m", fence));
    assert!(!h.state.check("m", fence + 1));
    assert!(!h.state.check("other", fence));
    h.reply(release("m", "a"));
    assert!(!h.state.check("m", fence));
}

#[test]
fn fences_strictly_increase_across_expiry_force_release_and_recreation() {
    let mut h = Harness::new();
    let mut fences = Vec::new();
    let mut note = |changes: &Changes| {
        for event in &changes.events {
            if let Event::Granted { name, fence, .. } = event {
                if name == "m" {
                    fences.push(*fence);
                }
            }
        }
    };
    let l1 = h.lease();
    let l2 = h.lease();
    note(&h.run(acquire("m", "a", l1, Mode::Exclusive, true)).1);
    note(&h.run(acquire("m", "b", l2, Mode::Exclusive, true)).1);
    note(
        &h.run(Command::ExpireLeases(ExpireLeases { ids: vec![l1] }))
            .1,
    );
    note(
        &h.run(Command::ForceRelease(ForceRelease { name: "m".into() }))
            .1,
    );
    assert!(h.state.lock("m").is_none());
    let l3 = h.lease();
    note(&h.run(acquire("m", "c", l3, Mode::Exclusive, true)).1);
    note(&h.run(Command::RevokeLease(RevokeLease { id: l3 })).1);
    note(&h.run(acquire("m", "d", l2, Mode::Exclusive, true)).1);
    assert_eq!(fences.len(), 4);
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "{fences:?}");
}

#[test]
fn locks_with_prefix_lists_in_name_order_up_to_the_limit() {
    let mut h = Harness::new();
    let l = h.lease();
    for name in ["jobs/b", "jobs/a", "job", "jobs/c", "k"] {
        h.reply(acquire(name, "o", l, Mode::Exclusive, true));
    }
    let names =
        |v: Vec<&crate::state::Lock>| v.into_iter().map(|x| x.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(h.state.locks_with_prefix("jobs/", 10)),
        ["jobs/a", "jobs/b", "jobs/c"]
    );
    assert_eq!(
        names(h.state.locks_with_prefix("jobs/", 2)),
        ["jobs/a", "jobs/b"]
    );
    assert_eq!(names(h.state.locks_with_prefix("", 10)).len(), 5);
    assert!(h.state.locks_with_prefix("zz", 10).is_empty());
}
