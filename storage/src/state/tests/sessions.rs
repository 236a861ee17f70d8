//! Exactly-once: retries, stale requests, pruning and client eviction.

use uuid::Uuid;

use super::*;
use crate::command::{ExpireLeases, GrantLease};
use crate::limits::MAX_REPLIES_PER_CLIENT;
use crate::state::ClientSession;

/// A small client bound, so filling the table is quick.
const CAPACITY: usize = 16;

#[test]
fn a_retried_release_is_applied_once() {
    let mut h = Harness::new();
    let c = Uuid::from_u128(1);
    let l = h.lease();
    h.run_as(seq(c, 0, 0), acquire("m", "a", l, Mode::Exclusive, false));
    h.run_as(seq(c, 1, 0), acquire("m", "a", l, Mode::Exclusive, false));
    let (first, _) = h.run_as(seq(c, 2, 0), release("m", "a"));
    assert_eq!(first, Response::Released { remaining: 1 });
    let mut expected = h.state.to_parts();
    let (retry, changes) = h.run_as(seq(c, 2, 0), release("m", "a"));
    assert_eq!(retry, first);
    assert!(changes.events.is_empty());
    // Only the client's last-seen slot moves.
    let session = expected.clients.iter().find(|(key, _)| key.client == c);
    let session = session.map(|(_, s)| ClientSession {
        last_index: h.index,
        ..s.clone()
    });
    assert!(session.is_some(), "the client had a session");
    set_session(&mut expected, c, session);
    assert_eq!(h.state.to_parts(), expected);
    assert_eq!(
        h.state
            .lock("m")
            .and_then(|m| m.holder("a"))
            .map(|x| x.count),
        Some(1)
    );
}

#[test]
fn a_rejected_reply_is_remembered_too() {
    let mut h = Harness::new();
    let c = Uuid::from_u128(1);
    let l = h.lease();
    let mut expected = h.state.to_parts();
    let (refused, changes) = h.run_as(seq(c, 0, 0), release("m", "a"));
    assert!(matches!(
        refused,
        Response::Rejected(CommandError::NotHolder { .. })
    ));
    assert!(changes.events.is_empty());
    // The refusal's only effect: a new session holding its reply.
    let session = ClientSession {
        replies: [(0, stored(&release("m", "a"), refused.clone()))].into(),
        forgotten_below: 0,
        last_index: h.index,
    };
    set_session(&mut expected, c, Some(session));
    assert_eq!(h.state.to_parts(), expected);
    h.run_as(seq(c, 1, 0), acquire("m", "a", l, Mode::Exclusive, false));
    assert_eq!(h.run_as(seq(c, 0, 0), release("m", "a")).0, refused);
    assert_eq!(h.holders("m"), ["a"]);
}

#[test]
fn acked_replies_are_pruned_and_older_retries_are_stale() {
    let mut h = Harness::new();
    let c = Uuid::from_u128(1);
    for s in 0..4 {
        h.run_as(
            seq(c, s, 0),
            Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
        );
    }
    h.run_as(
        seq(c, 4, 3),
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
    let session = h.state.client(None, &c).cloned().unwrap_or_default();
    assert_eq!(session.forgotten_below, 3);
    assert_eq!(session.replies.keys().copied().collect::<Vec<_>>(), [3, 4]);
    assert_eq!(session.last_index, h.index);

    let leases = h.state.leases().count();
    let (stale, changes) = h.run_as(
        seq(c, 1, 3),
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
    assert_eq!(
        stale,
        Response::Rejected(CommandError::StaleRequest { seq: 1 })
    );
    assert!(changes.events.is_empty());
    assert_eq!(
        h.state.leases().count(),
        leases,
        "a stale request is not applied"
    );
    assert!(!h
        .state
        .client(None, &c)
        .is_some_and(|s| s.replies.contains_key(&1)));
    // Still remembered: a retry of 3 replays.
    let (replayed, _) = h.run_as(
        seq(c, 3, 3),
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
    assert_eq!(
        replayed,
        Response::LeaseGranted {
            id: 4,
            ttl_ms: 1_000
        }
    );
}

#[test]
fn replies_per_client_are_bounded() {
    let mut h = Harness::new();
    let c = Uuid::from_u128(1);
    let n = MAX_REPLIES_PER_CLIENT as u64 + 2;
    for s in 0..n {
        h.run_as(
            seq(c, s, 0),
            Command::ExpireLeases(ExpireLeases { ids: vec![] }),
        );
    }
    let session = h.state.client(None, &c).cloned().unwrap_or_default();
    assert_eq!(session.replies.len(), MAX_REPLIES_PER_CLIENT);
    assert_eq!(session.forgotten_below, 2);
    let (stale, _) = h.run_as(
        seq(c, 1, 0),
        Command::ExpireLeases(ExpireLeases { ids: vec![] }),
    );
    assert_eq!(
        stale,
        Response::Rejected(CommandError::StaleRequest { seq: 1 })
    );
}

#[test]
fn the_least_recently_seen_client_is_evicted() {
    let mut state = LockState::default().with_client_capacity(CAPACITY);
    let noop = |client: u128| Request {
        origin: Some(seq(Uuid::from_u128(client), 0, 0)),
        caller: Default::default(),
        time_ms: 0,
        command: Command::ExpireLeases(ExpireLeases { ids: vec![] }),
    };
    let quotas = Quotas::default();
    let mut index = 0;
    for client in 0..CAPACITY as u128 {
        index += 1;
        state.apply(index, &noop(client), &quotas, &mut Changes::default());
    }
    // Client 0 is seen again, so client 1 is now the least recent.
    index += 1;
    state.apply(index, &noop(0), &quotas, &mut Changes::default());
    let mut expected = state.to_parts();
    index += 1;
    let newcomer = CAPACITY as u128;
    let reply = state.apply(index, &noop(newcomer), &quotas, &mut Changes::default());
    assert!(state.client(None, &Uuid::from_u128(1)).is_none());
    assert!(state.client(None, &Uuid::from_u128(0)).is_some());
    assert!(state.client(None, &Uuid::from_u128(newcomer)).is_some());
    assert_eq!(state.clients().count(), CAPACITY);
    // Exactly client 1 went and the newcomer came; no other session moved.
    set_session(&mut expected, Uuid::from_u128(1), None);
    let command = noop(newcomer).command;
    let session = ClientSession {
        replies: [(0, stored(&command, reply))].into(),
        forgotten_below: 0,
        last_index: index,
    };
    set_session(&mut expected, Uuid::from_u128(newcomer), Some(session));
    assert_eq!(state.to_parts(), expected);
    let rebuilt = LockState::from_parts(state.to_parts()).with_client_capacity(CAPACITY);
    assert_eq!(rebuilt, state);
}

/// A session's boxed replies encode exactly as the unboxed replies of
/// earlier builds, in postcard (snapshots, backups) and JSON (snapshots of
/// older builds): boxing them changed the memory, not the format. Fails if
/// the box ever gets a representation of its own.
#[test]
fn boxed_replies_encode_as_before() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Unboxed {
        replies: std::collections::BTreeMap<u64, StoredReply>,
        forgotten_below: u64,
        last_index: u64,
    }
    let command = acquire("m", "a", 7, Mode::Exclusive, false);
    let reply = Response::Granted { fence: 9, count: 1 };
    let session = ClientSession {
        replies: [(3, stored(&command, reply))].into(),
        forgotten_below: 2,
        last_index: 11,
    };
    let unboxed = Unboxed {
        replies: session
            .replies
            .iter()
            .map(|(seq, r)| (*seq, r.as_ref().clone()))
            .collect(),
        forgotten_below: 2,
        last_index: 11,
    };
    let bytes = postcard::to_stdvec(&session).expect("encode");
    assert_eq!(bytes, postcard::to_stdvec(&unboxed).expect("encode"));
    let back: ClientSession = postcard::from_bytes(&bytes).expect("decode");
    assert_eq!(back, session);
    let json = serde_json::to_string(&session).expect("encode");
    assert_eq!(json, serde_json::to_string(&unboxed).expect("encode"));
}
