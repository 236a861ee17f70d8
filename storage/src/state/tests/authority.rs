//! Attacks on lease ownership: another identity revoking, acquiring
//! through, releasing, cancelling or proclaiming through a lease it did not
//! grant, a non-admin force-release, and a request id replayed by another
//! identity. Each test's doc says how it fails without the defence.

use super::*;
use crate::account::Account;
use crate::command::Caller;
use crate::command::{Acquire, ForceRelease, GrantLease, Proclaim, RevokeLease};

fn caller(identity: &str) -> Caller {
    Caller {
        identity: Some(identity.into()),
        admin: false,
        source: None,
    }
}

fn admin(identity: &str) -> Caller {
    Caller {
        identity: Some(identity.into()),
        admin: true,
        source: None,
    }
}

impl Harness {
    /// Applies `command` as `caller`, without a client request id.
    fn run_by(&mut self, caller: &Caller, command: Command) -> (Response, Changes) {
        self.run_request(Request {
            origin: None,
            caller: caller.clone(),
            time_ms: 1_000 + self.index,
            command,
        })
    }

    /// A lease granted by `caller`.
    fn lease_of(&mut self, caller: &Caller) -> LeaseId {
        match self
            .run_by(caller, Command::GrantLease(GrantLease { ttl_ms: 10_000 }))
            .0
        {
            Response::LeaseGranted { id, .. } => id,
            other => panic!("lease grant failed: {other:?}"),
        }
    }

    /// Applies `command` as `caller` and asserts a permission refusal that
    /// changed nothing.
    fn assert_denied(&mut self, caller: &Caller, command: Command) -> String {
        let before = self.state.clone();
        let (reply, changes) = self.run_by(caller, command.clone());
        let Response::Rejected(CommandError::PermissionDenied(why)) = reply else {
            panic!("{command:?} by {caller:?} was not denied: {reply:?}");
        };
        assert_eq!(
            self.state, before,
            "{command:?}: a refusal changed the state"
        );
        assert!(changes.events.is_empty(), "{:?}", changes.events);
        why
    }
}

/// A lease records the identity that granted it.
#[test]
fn a_lease_belongs_to_its_granter() {
    let mut h = Harness::new();
    let id = h.lease_of(&caller("billing"));
    assert_eq!(
        h.state.lease(id).unwrap().identity.as_deref(),
        Some("billing")
    );
    let open = h.lease();
    assert_eq!(h.state.lease(open).unwrap().identity, None);
}

/// Another identity can neither revoke the lease nor acquire, release,
/// cancel or proclaim through it; the owner and an admin can. Without
/// `authorize` every one of the five commands by "mallory" is applied:
/// the lease is revoked, or "mallory" holds through "billing"'s lease.
#[test]
fn another_identity_cannot_act_through_a_lease() {
    let mut h = Harness::new();
    let billing = caller("billing");
    let mallory = caller("mallory");
    let lease = h.lease_of(&billing);
    let (granted, _) = h.run_by(
        &billing,
        acquire("inv/1", "b-task", lease, Mode::Exclusive, false),
    );
    assert!(matches!(granted, Response::Granted { .. }), "{granted:?}");
    let (queued, _) = h.run_by(
        &billing,
        Command::Acquire(Acquire {
            name: "leader".into(),
            owner: "b-cand".into(),
            lease,
            mode: Mode::Exclusive,
            wait: true,
            value: Some(b"b".to_vec()),
            lock_delay_ms: 0,
        }),
    );
    assert!(matches!(queued, Response::Granted { .. }), "{queued:?}");

    let why = h.assert_denied(&mallory, Command::RevokeLease(RevokeLease { id: lease }));
    assert!(why.contains("mallory") && why.contains("billing"), "{why}");
    h.assert_denied(
        &mallory,
        acquire("other", "m", lease, Mode::Exclusive, true),
    );
    h.assert_denied(&mallory, release("inv/1", "b-task"));
    h.assert_denied(&mallory, cancel("inv/1", "b-task"));
    h.assert_denied(
        &mallory,
        Command::Proclaim(Proclaim {
            name: "leader".into(),
            owner: "b-cand".into(),
            value: b"m".to_vec(),
        }),
    );
    // Without an identity (a node without authentication) it is no better.
    h.assert_denied(&Caller::default(), release("inv/1", "b-task"));

    // The owner releases; an admin may revoke.
    let (released, _) = h.run_by(&billing, release("inv/1", "b-task"));
    assert_eq!(released, Response::Released { remaining: 0 });
    let (revoked, _) = h.run_by(
        &admin("ops"),
        Command::RevokeLease(RevokeLease { id: lease }),
    );
    assert!(
        matches!(revoked, Response::LeaseRevoked { .. }),
        "{revoked:?}"
    );
}

/// A waiter is protected like a holder: another identity cannot cancel
/// its place in the queue. Without the waiter half of `may_act_as`, the
/// cancel by "mallory" dequeues "billing"'s waiter.
#[test]
fn another_identity_cannot_cancel_a_wait() {
    let mut h = Harness::new();
    let billing = caller("billing");
    let first = h.lease_of(&caller("jobs"));
    h.run_by(
        &caller("jobs"),
        acquire("q", "j", first, Mode::Exclusive, false),
    );
    let lease = h.lease_of(&billing);
    let (queued, _) = h.run_by(&billing, acquire("q", "b", lease, Mode::Exclusive, true));
    assert_eq!(queued, Response::Queued { position: 0 });
    h.assert_denied(&caller("mallory"), cancel("q", "b"));
    assert_eq!(h.waiters("q"), vec!["b".to_string()]);
}

/// Force-release needs the admin role once callers have identities.
/// Without the check, "billing" ends "jobs"'s hold.
#[test]
fn force_release_needs_admin() {
    let mut h = Harness::new();
    let jobs = caller("jobs");
    let lease = h.lease_of(&jobs);
    h.run_by(&jobs, acquire("x", "j", lease, Mode::Exclusive, false));
    let why = h.assert_denied(
        &caller("billing"),
        Command::ForceRelease(ForceRelease { name: "x".into() }),
    );
    assert!(why.contains("admin"), "{why}");
    let (done, _) = h.run_by(
        &admin("ops"),
        Command::ForceRelease(ForceRelease { name: "x".into() }),
    );
    assert_eq!(done, Response::ForceReleased { holders: 1 });
}

/// A request id replayed by another identity with the same command is that
/// identity's own request, in a session of its own: it is applied as such
/// (here refused: the lease is billing's), never answered the owner's
/// stored reply (its fence), and the owner's retry still replays. Without
/// sessions keyed by account, and before that the identity in the
/// fingerprint, "mallory" is answered `Granted` with "billing"'s fence.
#[test]
fn a_request_id_replayed_by_another_identity_is_its_own_request() {
    let mut h = Harness::new();
    let client = Uuid::from_u128(42);
    let lease = h.lease_of(&caller("billing"));
    let command = acquire("r", "b", lease, Mode::Exclusive, false);
    let by = |identity: &str| Request {
        origin: Some(seq(client, 1, 1)),
        caller: caller(identity),
        time_ms: 0,
        command: command.clone(),
    };
    let (first, _) = h.run_request(by("billing"));
    assert!(matches!(first, Response::Granted { .. }), "{first:?}");
    let (replayed, _) = h.run_request(by("mallory"));
    assert!(
        matches!(
            replayed,
            Response::Rejected(CommandError::PermissionDenied(_))
        ),
        "{replayed:?}"
    );
    let mallory = Account::Identity("mallory".into());
    assert!(h.state.client(Some(&mallory), &client).is_some());
    // The owner's own retry still gets its reply.
    let (retry, _) = h.run_request(by("billing"));
    assert_eq!(retry, first);
}
