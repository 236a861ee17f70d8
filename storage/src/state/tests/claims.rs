//! Claims: a server-issued cancel ends only a wait or hold that the call it
//! is for still owns; a retry with a higher attempt, or another request for
//! the same owner, takes it over.

use crate::command::Cancel;
use uuid::Uuid;

use super::*;
use crate::command::CancelOutcome;
use crate::state::StateParts;

const CLIENT: Uuid = Uuid::from_u128(7);

fn origin(seq: u64, attempt: u32) -> ClientSeq {
    ClientSeq {
        client: CLIENT,
        seq,
        acked_below: seq,
        attempt,
        anonymous: false,
    }
}

fn server_cancel(name: &str, owner: &str, call: &ClientSeq) -> Command {
    Command::Cancel(Cancel {
        name: name.into(),
        owner: owner.into(),
        call: Some(Claim::of(call)),
    })
}

fn cancelled(outcome: CancelOutcome) -> Response {
    Response::Cancelled { outcome }
}

/// "m" held by "a", with "w" (request 1, attempt 0) queued behind it.
fn queued_behind_a() -> (Harness, LeaseId) {
    let mut h = Harness::new();
    let l = h.lease();
    h.reply(acquire("m", "a", l, Mode::Exclusive, true));
    let (reply, _) = h.run_as(origin(1, 0), acquire("m", "w", l, Mode::Exclusive, true));
    assert_eq!(reply, Response::Queued { position: 0 });
    (h, l)
}

#[test]
fn the_calls_own_cancel_ends_its_wait() {
    let (mut h, _) = queued_behind_a();
    let (reply, changes) = h.run(server_cancel("m", "w", &origin(1, 0)));
    assert_eq!(reply, cancelled(CancelOutcome::Dequeued));
    assert_eq!(changes.events.len(), 1, "{:?}", changes.events);
    assert!(h.waiters("m").is_empty());
}

#[test]
fn a_retry_takes_the_wait_and_its_grant_over_from_the_first_attempt() {
    let (mut h, l) = queued_behind_a();
    // The client lost its connection and re-sent the request elsewhere.
    let (reply, _) = h.run_as(origin(1, 1), acquire("m", "w", l, Mode::Exclusive, true));
    assert_eq!(reply, Response::Queued { position: 0 }, "a replay");

    let before = h.state.clone();
    let (reply, changes) = h.run(server_cancel("m", "w", &origin(1, 0)));
    assert_eq!(reply, cancelled(CancelOutcome::Superseded));
    assert!(changes.events.is_empty());
    assert_eq!(h.state, before, "a superseded cancel changed the state");

    // Granted: the claim moves with the wait to the hold.
    h.reply(release("m", "a"));
    assert_eq!(h.holders("m"), ["w"]);
    let before = h.state.clone();
    let (reply, _) = h.run(server_cancel("m", "w", &origin(1, 0)));
    assert_eq!(reply, cancelled(CancelOutcome::Superseded));
    assert_eq!(
        h.state, before,
        "the first attempt's cancel released the grant"
    );

    // The attempt that owns it can still give it up.
    let (reply, _) = h.run(server_cancel("m", "w", &origin(1, 1)));
    assert_eq!(reply, cancelled(CancelOutcome::Released));
    assert!(h.state.lock("m").is_none());
}

#[test]
fn a_replayed_earlier_attempt_does_not_take_the_wait_back() {
    let (mut h, l) = queued_behind_a();
    h.run_as(origin(1, 2), acquire("m", "w", l, Mode::Exclusive, true));
    // A node's own re-forward of attempt 1 arrives late.
    h.run_as(origin(1, 1), acquire("m", "w", l, Mode::Exclusive, true));
    let (reply, _) = h.run(server_cancel("m", "w", &origin(1, 1)));
    assert_eq!(reply, cancelled(CancelOutcome::Superseded));
    let (reply, _) = h.run(server_cancel("m", "w", &origin(1, 2)));
    assert_eq!(reply, cancelled(CancelOutcome::Dequeued));
}

#[test]
fn another_request_for_the_same_owner_takes_the_hold_over() {
    let mut h = Harness::new();
    let l = h.lease();
    h.run_as(origin(1, 0), acquire("m", "w", l, Mode::Exclusive, true));
    // Re-entry by a later request: the first call's cancel must not end
    // the hold the second call was told about.
    let (reply, _) = h.run_as(origin(2, 0), acquire("m", "w", l, Mode::Exclusive, true));
    assert!(
        matches!(reply, Response::Granted { count: 2, .. }),
        "{reply:?}"
    );
    let (reply, _) = h.run(server_cancel("m", "w", &origin(1, 0)));
    assert_eq!(reply, cancelled(CancelOutcome::Superseded));
    assert_eq!(h.holders("m"), ["w"]);

    // The same for a wait asked for again by a new request.
    h.reply(acquire("q", "a", l, Mode::Exclusive, true));
    h.run_as(origin(3, 0), acquire("q", "w", l, Mode::Exclusive, true));
    h.run_as(origin(4, 0), acquire("q", "w", l, Mode::Exclusive, true));
    let (reply, _) = h.run(server_cancel("q", "w", &origin(3, 0)));
    assert_eq!(reply, cancelled(CancelOutcome::Superseded));
    assert_eq!(h.waiters("q"), ["w"]);
}

#[test]
fn a_clients_own_cancel_ends_the_wait_whoever_claimed_it() {
    let (mut h, l) = queued_behind_a();
    h.run_as(origin(1, 3), acquire("m", "w", l, Mode::Exclusive, true));
    assert_eq!(
        h.reply(cancel("m", "w")),
        cancelled(CancelOutcome::Dequeued)
    );
    // And a hold without a claim (granted to a request without an origin)
    // is ended by any call's cancel.
    assert_eq!(
        h.reply(server_cancel("m", "a", &origin(9, 0))),
        cancelled(CancelOutcome::Released)
    );
}

#[test]
fn claims_survive_a_snapshot() {
    let (mut h, l) = queued_behind_a();
    h.run_as(origin(1, 1), acquire("m", "w", l, Mode::Exclusive, true));
    let json = serde_json::to_vec(&h.state.to_parts()).expect("parts serialize");
    let parts: StateParts = serde_json::from_slice(&json).expect("parts deserialize");
    let mut rebuilt = LockState::from_parts(parts);
    assert_eq!(rebuilt, h.state);
    let mut changes = Changes::default();
    let reply = rebuilt.apply(
        h.index + 1,
        &Request {
            origin: None,
            caller: Default::default(),
            time_ms: 0,
            command: server_cancel("m", "w", &origin(1, 0)),
        },
        &h.quotas,
        &mut changes,
    );
    assert_eq!(reply, cancelled(CancelOutcome::Superseded));
}
