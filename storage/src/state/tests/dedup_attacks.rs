//! Attacks on exactly-once: a request id reused for another command, a
//! flood of fresh client ids, and retries from a client the table forgot.
//! Each test's doc says how it fails without the defence.

use uuid::Uuid;

use super::*;
use crate::command::{ExpireLeases, GrantLease, RevokeLease};
use crate::limits::MAX_CLIENT_SESSIONS;

/// A small client bound, so a flood is quick.
const CAPACITY: usize = 16;

/// Anything at all, from a client: the cheapest request that makes a session.
fn noop() -> Command {
    Command::ExpireLeases(ExpireLeases { ids: vec![] })
}

/// `n` fresh clients, one request each.
fn flood(h: &mut Harness, first: u128, n: usize) {
    for client in first..first + n as u128 {
        let (reply, _) = h.run_as(seq(Uuid::from_u128(client), 1, 1), noop());
        assert!(!matches!(reply, Response::Rejected(_)), "{reply:?}");
    }
}

/// Grants a lease on behalf of `origin` and returns its id.
fn lease_as(h: &mut Harness, origin: ClientSeq) -> LeaseId {
    match h
        .run_as(origin, Command::GrantLease(GrantLease { ttl_ms: 10_000 }))
        .0
    {
        Response::LeaseGranted { id, .. } => id,
        other => panic!("lease grant failed: {other:?}"),
    }
}

fn count(h: &Harness, name: &str, owner: &str) -> Option<u32> {
    h.state
        .lock(name)
        .and_then(|l| l.holder(owner))
        .map(|x| x.count)
}

/// Applies `request` and asserts it was refused with no effect at all.
fn assert_refused(h: &mut Harness, origin: ClientSeq, command: Command) -> CommandError {
    let before = h.state.clone();
    let (reply, changes) = h.run_as(origin, command.clone());
    let Response::Rejected(error) = reply else {
        panic!("{command:?} from {origin:?} was not refused: {reply:?}");
    };
    assert_eq!(h.state, before, "{command:?}: a refusal changed the state");
    assert!(changes.events.is_empty(), "{:?}", changes.events);
    error
}

/// A request id reused for another command is refused and changes nothing;
/// the same command again is answered the original reply. Without the
/// fingerprint check (`SessionTable::admit` ignoring it), the Acquire of
/// "free" under the id of the Acquire of "m" is answered `Granted`, for a
/// lock nobody holds.
#[test]
fn a_reused_request_id_with_another_command_is_refused() {
    let mut h = Harness::new();
    let c = Uuid::from_u128(1);
    let l = lease_as(&mut h, seq(c, 1, 1));
    // The lease grant's id with another TTL.
    let reused_grant = CommandError::RequestIdReused { client: c, seq: 1 };
    let other_ttl = Command::GrantLease(GrantLease { ttl_ms: 20_000 });
    assert_eq!(
        assert_refused(&mut h, seq(c, 1, 1), other_ttl),
        reused_grant
    );

    let take_m = acquire("m", "a", l, Mode::Exclusive, false);
    let (granted, _) = h.run_as(seq(c, 2, 2), take_m.clone());
    assert!(matches!(granted, Response::Granted { count: 1, .. }));

    let other_lock = acquire("free", "a", l, Mode::Exclusive, false);
    let reused = CommandError::RequestIdReused { client: c, seq: 2 };
    assert_eq!(assert_refused(&mut h, seq(c, 2, 2), other_lock), reused);
    assert!(h.state.lock("free").is_none());
    // Another owner, another mode, a wait instead of a try: all refused.
    for command in [
        acquire("m", "b", l, Mode::Exclusive, false),
        acquire("m", "a", l, Mode::Shared, false),
        acquire("m", "a", l, Mode::Exclusive, true),
        release("m", "a"),
    ] {
        assert_eq!(assert_refused(&mut h, seq(c, 2, 2), command), reused);
    }

    // The real retry replays, whatever its clock says.
    let retry = Request {
        origin: Some(seq(c, 2, 2)),
        caller: Default::default(),
        time_ms: 999_999,
        command: take_m,
    };
    let (replayed, changes) = h.run_request(retry);
    assert_eq!(replayed, granted);
    assert!(changes.events.is_empty());
    assert_eq!(count(&h, "m", "a"), Some(1));
}

/// A refusal is remembered with its command too: reusing its id for a
/// command that would succeed is refused, not applied.
#[test]
fn a_reused_id_of_a_refused_request_is_refused() {
    let mut h = Harness::new();
    let c = Uuid::from_u128(1);
    let l = lease_as(&mut h, seq(c, 1, 1));
    let (refused, _) = h.run_as(seq(c, 2, 2), release("m", "a"));
    assert!(matches!(
        refused,
        Response::Rejected(CommandError::NotHolder { .. })
    ));
    let take = acquire("m", "a", l, Mode::Exclusive, false);
    assert_eq!(
        assert_refused(&mut h, seq(c, 2, 2), take),
        CommandError::RequestIdReused { client: c, seq: 2 }
    );
    assert!(h.state.lock("m").is_none());
}

/// The attack: a client holds a lock on its lease, its reply is
/// lost, MAX_CLIENT_SESSIONS + N fresh client ids write, then the client
/// retries. The retry replays and the re-entry count stays 1, so one
/// release frees the lock. Without pinning (eviction of the least recently
/// seen client whatever its leases), the flood forgets the holder and its
/// retry is refused as expired (or, from a client that reports no earlier
/// replies, applied again: count 2, and the release leaves the lock held).
#[test]
fn a_flood_of_fresh_clients_cannot_evict_a_client_with_a_live_lease() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    let c = Uuid::from_u128(1);
    let l = lease_as(&mut h, seq(c, 1, 1));
    let take = acquire("m", "a", l, Mode::Exclusive, true);
    let (granted, _) = h.run_as(seq(c, 2, 2), take.clone());
    assert!(matches!(granted, Response::Granted { count: 1, .. }));

    flood(&mut h, 1_000, CAPACITY + 10);
    assert_eq!(h.state.clients().count(), CAPACITY, "the bound holds");
    assert!(
        h.state.client(None, &c).is_some(),
        "the holder was forgotten"
    );

    let (retry, changes) = h.run_as(seq(c, 2, 2), take);
    assert_eq!(retry, granted, "the retry must replay");
    assert!(changes.events.is_empty());
    assert_eq!(count(&h, "m", "a"), Some(1));
    let (released, _) = h.run_as(seq(c, 3, 3), release("m", "a"));
    assert_eq!(released, Response::Released { remaining: 0 });
    assert!(h.state.lock("m").is_none(), "one release frees the lock");
}

/// When every remembered client has a live lease, a new client is refused
/// (RESOURCE_EXHAUSTED at the edge) and nothing changes; once a lease ends,
/// its client can be forgotten and the new client gets in. Without the
/// refusal the table would either grow past its bound or forget a client
/// with a live lease.
#[test]
fn a_table_full_of_live_clients_refuses_new_ones() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    let mut leases = Vec::new();
    for client in 1..=CAPACITY as u128 {
        leases.push(lease_as(&mut h, seq(Uuid::from_u128(client), 1, 1)));
    }
    let newcomer = Uuid::from_u128(1_000);
    assert_eq!(
        assert_refused(&mut h, seq(newcomer, 1, 1), noop()),
        CommandError::TooManyClients(CAPACITY)
    );
    // Client 3 revokes its lease: it is the only one that may be forgotten.
    let third = Uuid::from_u128(3);
    h.run_as(
        seq(third, 2, 2),
        Command::RevokeLease(RevokeLease { id: leases[2] }),
    );
    let (reply, _) = h.run_as(seq(newcomer, 1, 1), noop());
    assert!(!matches!(reply, Response::Rejected(_)), "{reply:?}");
    assert!(h.state.client(None, &third).is_none());
    assert!(h.state.client(None, &newcomer).is_some());
    assert_eq!(h.state.clients().count(), CAPACITY);
}

/// A client that had replies (acked_below > 1) but is no longer remembered
/// is refused as expired, its request not applied, and no session is made
/// for it. Here the client acts on a lease another client granted, so
/// nothing pins it and the flood forgets it. Without the check, its retried
/// Acquire is applied a second time (re-entry count 2).
#[test]
fn a_retry_from_a_forgotten_client_is_refused_not_applied() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    let l = lease_as(&mut h, seq(Uuid::from_u128(1), 1, 1));
    let d = Uuid::from_u128(2);
    h.run_as(seq(d, 1, 1), acquire("x", "d", l, Mode::Exclusive, false));
    let take_y = acquire("y", "d", l, Mode::Exclusive, false);
    let (granted, _) = h.run_as(seq(d, 2, 2), take_y.clone());
    assert!(matches!(granted, Response::Granted { count: 1, .. }));

    flood(&mut h, 1_000, CAPACITY);
    assert!(
        h.state.client(None, &d).is_none(),
        "the flood forgot the client"
    );
    let expired = assert_refused(&mut h, seq(d, 2, 2), take_y);
    assert_eq!(
        expired,
        CommandError::SessionExpired {
            client: d,
            seq: 2,
            acked_below: 2
        }
    );
    assert_eq!(count(&h, "y", "d"), Some(1));
    // Its later requests are refused too: the client id is spent.
    let later = assert_refused(&mut h, seq(d, 3, 3), release("y", "d"));
    assert!(matches!(later, CommandError::SessionExpired { .. }));
    assert!(h.state.client(None, &d).is_none());
}

/// A new client id whose first request to arrive is not its first (requests
/// sent concurrently) is still admitted: only `acked_below` > 1 says a
/// client had replies before.
#[test]
fn a_new_client_with_concurrent_first_requests_is_admitted() {
    let mut h = Harness::new();
    let e = Uuid::from_u128(5);
    let (second, _) = h.run_as(
        seq(e, 2, 1),
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
    assert!(matches!(second, Response::LeaseGranted { .. }));
    let (first, _) = h.run_as(
        seq(e, 1, 1),
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
    assert!(matches!(first, Response::LeaseGranted { .. }));
    assert_ne!(first, second);
}

/// The pin lasts as long as the lease: once it expires, the client is an
/// ordinary one again and a flood forgets it. A lease granted without a
/// client request id (anonymous) pins nothing. Pins are rebuilt from the
/// leases when the state is loaded.
#[test]
fn pins_follow_the_leases_and_survive_a_reload() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    let c = Uuid::from_u128(1);
    let l = lease_as(&mut h, seq(c, 1, 1));
    let anonymous = Uuid::from_u128(2);
    let one_off = ClientSeq {
        anonymous: true,
        ..seq(anonymous, 1, 0)
    };
    let anon_lease = lease_as(&mut h, one_off);
    assert_eq!(h.state.lease(l).and_then(|x| x.granted_by), Some(c));
    assert_eq!(h.state.lease(anon_lease).and_then(|x| x.granted_by), None);

    let parts = h.state.to_parts();
    let reloaded = LockState::from_parts(parts).with_client_capacity(CAPACITY);
    assert_eq!(reloaded, h.state, "pins are rebuilt from the leases");
    h.state = reloaded;

    flood(&mut h, 1_000, CAPACITY);
    assert!(
        h.state.client(None, &c).is_some(),
        "pinned by its live lease"
    );
    assert!(
        h.state.client(None, &anonymous).is_none(),
        "anonymous pins nothing"
    );

    h.run(Command::ExpireLeases(ExpireLeases { ids: vec![l] }));
    flood(&mut h, 2_000, CAPACITY);
    assert!(
        h.state.client(None, &c).is_none(),
        "unpinned once its lease ended"
    );
}

/// Outside these tests the bound is the one `limits` documents.
#[test]
fn the_default_bound_is_max_client_sessions() {
    let default = LockState::default();
    assert_eq!(
        default.clone().with_client_capacity(MAX_CLIENT_SESSIONS),
        default
    );
}
