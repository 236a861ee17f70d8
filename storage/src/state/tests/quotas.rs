//! Quotas per account: leases, client ids with a live lease, waiters; the
//! bulk revoke of an account's leases; and sessions keyed by account, so
//! no account can touch another's sequence. Each test's doc says how it
//! fails without the defence.

use std::net::IpAddr;

use uuid::Uuid;

use super::*;
use crate::account::Account;
use crate::command::Caller;
use crate::command::{AcquireWithTtl, ExpireLeases, GrantLease, RevokeAccountLeases, RevokeLease};
use crate::limits::{Quota, MAX_REVOKED_PER_ENTRY};

/// A small client bound, so a flood is quick.
const CAPACITY: usize = 16;

/// An unauthenticated caller at 10.0.0.`host`.
fn from(host: u8) -> Caller {
    Caller {
        source: Some(IpAddr::from([10, 0, 0, host])),
        ..Caller::default()
    }
}

fn identity(name: &str, admin: bool) -> Caller {
    Caller {
        identity: Some(name.into()),
        admin,
        source: None,
    }
}

fn account(caller: &Caller) -> Account {
    caller.account().expect("a caller with an account")
}

/// Quotas of `leases` leases, `clients` client ids and `waiters` waits.
fn quotas(leases: u32, clients: u32, waiters: u32) -> Quotas {
    Quotas {
        leases,
        clients,
        waiters,
    }
}

impl Harness {
    /// Applies `command` as `caller`, with request id `origin` if any.
    fn run_full(
        &mut self,
        caller: &Caller,
        origin: Option<ClientSeq>,
        command: Command,
    ) -> (Response, Changes) {
        self.run_request(Request {
            origin,
            caller: caller.clone(),
            time_ms: 1_000 + self.index,
            command,
        })
    }

    /// Applies `command` as `caller` and returns the reply.
    fn reply_to(&mut self, caller: &Caller, command: Command) -> Response {
        self.run_full(caller, None, command).0
    }

    /// A lease granted by `caller` (from client `origin`, if any).
    fn grant_as(&mut self, caller: &Caller, origin: Option<ClientSeq>) -> LeaseId {
        match self
            .run_full(
                caller,
                origin,
                Command::GrantLease(GrantLease { ttl_ms: 10_000 }),
            )
            .0
        {
            Response::LeaseGranted { id, .. } => id,
            other => panic!("lease grant by {caller:?} failed: {other:?}"),
        }
    }

    /// Applies `command` as `caller` and asserts a quota refusal that
    /// changed nothing; returns it.
    fn assert_over_quota(
        &mut self,
        caller: &Caller,
        origin: Option<ClientSeq>,
        command: Command,
    ) -> CommandError {
        let before = self.state.clone();
        let (reply, changes) = self.run_full(caller, origin, command.clone());
        let Response::Rejected(e @ CommandError::QuotaExceeded { .. }) = reply else {
            panic!("{command:?} by {caller:?} was not refused by a quota: {reply:?}");
        };
        assert_eq!(
            self.state, before,
            "{command:?}: a refusal changed the state"
        );
        assert!(changes.events.is_empty(), "{:?}", changes.events);
        e
    }
}

/// One source address holds at most its lease quota; the refusal names the
/// quota, the source and the limit, and changes nothing; another source is
/// served meanwhile, a lock on a lease of its own counts too, and once one
/// lease ends the source may grant again. Without the check in
/// `LeaseTable::grant`, the fourth grant succeeds.
#[test]
fn a_source_holds_at_most_its_lease_quota() {
    let mut h = Harness::new();
    h.quotas = quotas(3, 100, 100);
    let (flooder, honest) = (from(1), from(2));
    let leases: Vec<LeaseId> = (0..3).map(|_| h.grant_as(&flooder, None)).collect();
    let refused = h.assert_over_quota(
        &flooder,
        None,
        Command::GrantLease(GrantLease { ttl_ms: 10_000 }),
    );
    assert_eq!(
        refused,
        CommandError::QuotaExceeded {
            quota: Quota::Leases,
            account: account(&flooder),
            count: 3,
            limit: 3,
        }
    );
    assert_eq!(
        refused.to_string(),
        "source 10.0.0.1 holds 3 leases (limit 3, the server's quota_leases): \
         no new lease until one of them ends"
    );
    let own_ttl = Command::AcquireWithTtl(AcquireWithTtl {
        name: "m".into(),
        owner: "o".into(),
        ttl_ms: 1_000,
        mode: Mode::Exclusive,
        lock_delay_ms: 0,
    });
    h.assert_over_quota(&flooder, None, own_ttl);
    h.grant_as(&honest, None);
    assert_eq!(h.state.account_use(&account(&flooder)).leases, 3);
    h.reply_to(
        &flooder,
        Command::RevokeLease(RevokeLease { id: leases[0] }),
    );
    h.grant_as(&flooder, None);
}

/// An identity is one account wherever it connects from, and the quota
/// holds for admins too (theirs is their own).
#[test]
fn an_identity_holds_at_most_its_lease_quota() {
    let mut h = Harness::new();
    h.quotas = quotas(2, 100, 100);
    let billing = identity("billing", false);
    let elsewhere = Caller {
        source: Some(IpAddr::from([10, 9, 9, 9])),
        ..billing.clone()
    };
    h.grant_as(&billing, None);
    h.grant_as(&elsewhere, None);
    let refused = h.assert_over_quota(
        &billing,
        None,
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
    assert!(
        refused
            .to_string()
            .starts_with("identity billing holds 2 leases (limit 2"),
        "{refused}"
    );
    let ops = identity("ops", true);
    h.grant_as(&ops, None);
    h.grant_as(&ops, None);
    h.assert_over_quota(
        &ops,
        None,
        Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    );
}

/// The waits on one account's leases are bounded, whichever locks they are
/// on; a wait that ends (granted, cancelled, its lease revoked) frees its
/// place. Without the check in `acquire_existing`, the third wait queues.
#[test]
fn an_account_has_at_most_its_waiter_quota() {
    let mut h = Harness::new();
    h.quotas = quotas(100, 100, 2);
    let (flooder, honest) = (from(1), from(2));
    let holder = h.grant_as(&honest, None);
    for name in ["a", "b", "c"] {
        h.reply_to(&honest, acquire(name, "h", holder, Mode::Exclusive, false));
    }
    let waiting = h.grant_as(&flooder, None);
    for name in ["a", "b"] {
        let reply = h.reply_to(&flooder, acquire(name, "w", waiting, Mode::Exclusive, true));
        assert_eq!(reply, Response::Queued { position: 0 });
    }
    let refused = h.assert_over_quota(
        &flooder,
        None,
        acquire("c", "w", waiting, Mode::Exclusive, true),
    );
    assert!(matches!(
        refused,
        CommandError::QuotaExceeded {
            quota: Quota::Waiters,
            count: 2,
            ..
        }
    ));
    // A try-lock queues nothing and is answered as usual.
    let busy = h.reply_to(&flooder, acquire("c", "w", waiting, Mode::Exclusive, false));
    assert_eq!(busy, Response::Busy);
    // Another account's waits are its own.
    let other = h.grant_as(&honest, None);
    let queued = h.reply_to(&honest, acquire("c", "w2", other, Mode::Exclusive, true));
    assert_eq!(queued, Response::Queued { position: 0 });

    // Granted: no longer waiting.
    h.reply_to(&honest, release("a", "h"));
    assert_eq!(h.state.account_use(&account(&flooder)).waiters, 1);
    let queued = h.reply_to(&flooder, acquire("c", "w", waiting, Mode::Exclusive, true));
    assert_eq!(queued, Response::Queued { position: 1 });
    // Cancelled, then the lease revoked: nothing left.
    h.reply_to(&flooder, cancel("b", "w"));
    h.reply_to(&flooder, Command::RevokeLease(RevokeLease { id: waiting }));
    assert_eq!(h.state.account_use(&account(&flooder)), Default::default());
}

/// The flood: one source grants a lease from each of many fresh
/// client ids, each pinning its session. It is refused past its client
/// quota (naming it), and a client of another source is still admitted
/// and granted a lease. Without the per-account quota the flood pins every
/// place in the table and the honest client is refused `TooManyClients`.
#[test]
fn a_flood_of_client_ids_from_one_source_leaves_room_for_others() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    h.quotas = quotas(100, 4, 100);
    let flooder = from(1);
    let mut refused = None;
    for client in 1..=CAPACITY as u128 * 2 {
        let origin = seq(Uuid::from_u128(client), 1, 1);
        let grant = Command::GrantLease(GrantLease { ttl_ms: 10_000 });
        match h.run_full(&flooder, Some(origin), grant).0 {
            Response::LeaseGranted { .. } => {}
            Response::Rejected(e) => {
                refused.get_or_insert(e);
            }
            other => panic!("{other:?}"),
        }
    }
    let refused = refused.expect("the flood was refused at its quota");
    assert_eq!(
        refused,
        CommandError::QuotaExceeded {
            quota: Quota::Clients,
            account: account(&flooder),
            count: 4,
            limit: 4,
        }
    );
    assert!(
        refused
            .to_string()
            .contains("source 10.0.0.1 has 4 client ids with a live lease"),
        "{refused}"
    );
    let honest = from(2);
    let client = Uuid::from_u128(1_000_000);
    h.grant_as(&honest, Some(seq(client, 1, 1)));
    assert!(h.state.client(Some(&account(&honest)), &client).is_some());
}

/// A source at its client quota with unpinned clients forgets its own least
/// recently seen one to admit a new one, never another source's: a flood
/// of one-off client ids leaves the honest source's sessions (without a
/// lease, so unpinned) in place. Without the per-account eviction, the
/// flood pushes the honest sessions out of the shared table and their
/// retries become "outcome unknown".
#[test]
fn a_flood_of_one_off_clients_forgets_only_its_own() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    h.quotas = quotas(100, 4, 100);
    let honest = from(2);
    let mine: Vec<Uuid> = (1..=3).map(Uuid::from_u128).collect();
    for &client in &mine {
        h.run_full(&honest, Some(seq(client, 1, 1)), noop());
    }
    let flooder = from(1);
    for client in 100..100 + CAPACITY as u128 * 3 {
        let (reply, _) = h.run_full(&flooder, Some(seq(Uuid::from_u128(client), 1, 1)), noop());
        assert!(!matches!(reply, Response::Rejected(_)), "{reply:?}");
    }
    for client in &mine {
        assert!(
            h.state.client(Some(&account(&honest)), client).is_some(),
            "the flood forgot {client}"
        );
    }
    assert_eq!(h.state.account_use(&account(&flooder)).clients, 4);
    let last = Uuid::from_u128(100 + CAPACITY as u128 * 3 - 1);
    assert!(h.state.client(Some(&account(&flooder)), &last).is_some());
}

/// The attack on exactly-once: the honest source's acquire is
/// granted and its reply lost; another source sends requests under the
/// same client id, the last with seq and `acked_below` 2^63. The honest retry still
/// replays the grant and its next request is applied; the other source's
/// request went to a session of its own. With sessions keyed by client id
/// alone, the retry and the next request were refused as stale ("may or
/// may not have been applied").
#[test]
fn another_account_cannot_touch_a_clients_sequence() {
    let mut h = Harness::new();
    let (honest, intruder) = (from(1), from(2));
    let c = Uuid::from_u128(7);
    let l = h.grant_as(&honest, Some(seq(c, 1, 1)));
    let take = acquire("m", "a", l, Mode::Exclusive, false);
    let (granted, _) = h.run_full(&honest, Some(seq(c, 2, 2)), take.clone());
    assert!(matches!(granted, Response::Granted { count: 1, .. }));

    let far = 1u64 << 63;
    for origin in [seq(c, 1, 1), seq(c, far, far)] {
        h.run_full(&intruder, Some(origin), noop());
    }
    let (retry, changes) = h.run_full(&honest, Some(seq(c, 2, 2)), take);
    assert_eq!(retry, granted, "the retry replays");
    assert!(changes.events.is_empty());
    let (released, _) = h.run_full(&honest, Some(seq(c, 3, 3)), release("m", "a"));
    assert_eq!(released, Response::Released { remaining: 0 });
    let theirs = h
        .state
        .client(Some(&account(&intruder)), &c)
        .expect("its own session");
    assert_eq!(theirs.forgotten_below, far);
    let ours = h
        .state
        .client(Some(&account(&honest)), &c)
        .expect("the honest session");
    assert_eq!(ours.forgotten_below, 3);
}

/// Revoking an account's leases ends exactly those (their holds released
/// to the next waiter, their waits dropped), leaves every other account's
/// alone, unpins their granters, and answers how many it revoked and
/// released. An admin or an unauthenticated caller may; another identity
/// may not.
#[test]
fn revoking_an_accounts_leases_ends_only_those() {
    let mut h = Harness::new();
    let billing = identity("billing", false);
    let jobs = identity("jobs", false);
    let c = Uuid::from_u128(3);
    let held = h.grant_as(&billing, Some(seq(c, 1, 1)));
    let waiting = h.grant_as(&billing, None);
    let kept = h.grant_as(&jobs, None);
    h.reply_to(&billing, acquire("x", "b", held, Mode::Exclusive, false));
    h.reply_to(&jobs, acquire("x", "j", kept, Mode::Exclusive, true));
    h.reply_to(&jobs, acquire("y", "j", kept, Mode::Exclusive, false));
    h.reply_to(&billing, acquire("y", "b", waiting, Mode::Exclusive, true));

    let revoke = Command::RevokeAccountLeases(RevokeAccountLeases {
        account: Account::Identity("billing".into()),
    });
    let before = h.state.clone();
    let (reply, changes) = h.run_full(&jobs, None, revoke.clone());
    assert!(
        matches!(reply, Response::Rejected(CommandError::PermissionDenied(_))),
        "{reply:?}"
    );
    assert_eq!(h.state, before);
    assert!(changes.events.is_empty());

    let reply = h.reply_to(&identity("ops", true), revoke.clone());
    assert_eq!(
        reply,
        Response::AccountLeasesRevoked {
            revoked: 2,
            released: 1,
            remaining: 0
        }
    );
    assert!(h.state.lease(held).is_none() && h.state.lease(waiting).is_none());
    assert!(h.state.lease(kept).is_some());
    assert_eq!(h.holders("x"), ["j"], "the waiter got x");
    assert!(h.waiters("y").is_empty());
    let billing_use = h.state.account_use(&Account::Identity("billing".into()));
    assert_eq!((billing_use.leases, billing_use.waiters), (0, 0));
    // Nothing left: a second revoke revokes none.
    let again = h.reply_to(&from(9), revoke);
    assert_eq!(
        again,
        Response::AccountLeasesRevoked {
            revoked: 0,
            released: 0,
            remaining: 0
        }
    );
}

/// One revoke entry ends at most `MAX_REVOKED_PER_ENTRY` leases, lowest
/// ids first, and says how many are left for the next.
#[test]
fn a_revoke_entry_ends_a_bounded_number_of_leases() {
    let flooder = Account::source(IpAddr::from([10, 0, 0, 1]));
    let n = MAX_REVOKED_PER_ENTRY as u64 + 3;
    let mut h = Harness::with_leases(n, Some(&flooder));
    let revoke = Command::RevokeAccountLeases(RevokeAccountLeases {
        account: flooder.clone(),
    });
    let first = h.reply(revoke.clone());
    assert_eq!(
        first,
        Response::AccountLeasesRevoked {
            revoked: MAX_REVOKED_PER_ENTRY as u32,
            released: 0,
            remaining: 3
        }
    );
    let left: Vec<LeaseId> = h.state.leases().map(|l| l.id).collect();
    assert_eq!(left, [n - 2, n - 1, n]);
    let second = h.reply(revoke);
    assert_eq!(
        second,
        Response::AccountLeasesRevoked {
            revoked: 3,
            released: 0,
            remaining: 0
        }
    );
}

/// What accounts hold is derived state: rebuilt from a snapshot's parts it
/// equals what the applies built up, pins and quotas included.
#[test]
fn account_use_is_rebuilt_from_the_parts() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    h.quotas = quotas(3, 2, 2);
    let a = from(1);
    let l = h.grant_as(&a, Some(seq(Uuid::from_u128(1), 1, 1)));
    h.grant_as(&a, Some(seq(Uuid::from_u128(2), 1, 1)));
    let holder = h.grant_as(&from(2), None);
    h.reply_to(&from(2), acquire("m", "h", holder, Mode::Exclusive, false));
    h.reply_to(&a, acquire("m", "w", l, Mode::Exclusive, true));
    let rebuilt = LockState::from_parts(h.state.to_parts()).with_client_capacity(CAPACITY);
    assert_eq!(rebuilt, h.state);
    h.state = rebuilt;
    // Still at its client quota, every client pinned: refused.
    let third = seq(Uuid::from_u128(3), 1, 1);
    let refused = h.assert_over_quota(&a, Some(third), noop());
    assert!(matches!(
        refused,
        CommandError::QuotaExceeded {
            quota: Quota::Clients,
            ..
        }
    ));
}

/// Anything at all, from a client: the cheapest request that makes a session.
fn noop() -> Command {
    Command::ExpireLeases(ExpireLeases { ids: vec![] })
}
