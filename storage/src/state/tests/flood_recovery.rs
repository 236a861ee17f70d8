//! A reply table that floods filled: recoveries (revoking leases,
//! force-releasing) and calls without a request id are still applied,
//! honest accounts keep their room, and IPv6 callers are counted per /64.
//! Each test's doc says how it fails without the defence.

use std::net::IpAddr;

use uuid::Uuid;

use super::*;
use crate::command::{Caller, ExpireLeases, ForceRelease, GrantLease, RevokeAccountLeases};
use crate::limits::{Quota, MAX_CLIENT_SESSIONS, MAX_LEASES};

/// A small client bound, so a flood is quick.
const CAPACITY: usize = 8;

/// An unauthenticated caller at `addr`, as the node that takes its call
/// records it.
fn at(addr: &str) -> Caller {
    Caller::unauthenticated(addr.parse::<IpAddr>().expect("an address"))
}

fn account_of(caller: &Caller) -> Account {
    caller
        .account()
        .expect("an unauthenticated caller has an account")
}

fn quotas(clients: u32) -> Quotas {
    Quotas {
        leases: 1_000,
        clients,
        waiters: 1_000,
    }
}

impl Harness {
    fn apply_as(&mut self, caller: &Caller, origin: ClientSeq, command: Command) -> Response {
        self.run_request(Request {
            origin: Some(origin),
            caller: caller.clone(),
            time_ms: 1_000 + self.index,
            command,
        })
        .0
    }

    /// Client `client` of `caller` grants a 10 s lease, which pins it.
    fn pinned_lease(&mut self, caller: &Caller, client: u128) -> LeaseId {
        let grant = Command::GrantLease(GrantLease { ttl_ms: 10_000 });
        match self.apply_as(caller, seq(Uuid::from_u128(client), 1, 1), grant) {
            Response::LeaseGranted { id, .. } => id,
            other => panic!("grant by client {client} of {caller:?}: {other:?}"),
        }
    }

    /// Fills `caller`'s client quota with pinned clients numbered from
    /// `first`; returns their leases.
    fn fill_quota(&mut self, caller: &Caller, first: u128) -> Vec<LeaseId> {
        let n = self.quotas.clients as u128;
        (first..first + n)
            .map(|client| self.pinned_lease(caller, client))
            .collect()
    }
}

fn revoke_all(caller: &Caller) -> Command {
    Command::RevokeAccountLeases(RevokeAccountLeases {
        account: account_of(caller),
    })
}

fn force_release(name: &str) -> Command {
    Command::ForceRelease(ForceRelease { name: name.into() })
}

/// A request id the server made up for a call that sent none.
fn anonymous(client: u128) -> ClientSeq {
    ClientSeq {
        anonymous: true,
        acked_below: 0,
        ..seq(Uuid::from_u128(client), 1, 0)
    }
}

/// The lock-out, scaled: every place of the table is held by a
/// client with a live lease, so a new client id is refused. A revoke of the
/// flooder's leases, a force-release and a call without a request id from
/// a new client are still applied, without taking a place; the revoke
/// unpins the flood, and the honest client then gets in. Without the
/// exemption in `SessionTable::admit_new` all three are refused
/// `TooManyClients` and nobody can recover until the leases expire.
#[test]
fn recovery_is_applied_when_every_place_is_pinned() {
    let mut h = Harness::with_client_capacity(CAPACITY);
    h.quotas = quotas(CAPACITY as u32 / 2);
    let flooders = [at("10.0.0.2"), at("10.0.0.3")];
    let mut flood = Vec::new();
    for (i, flooder) in flooders.iter().enumerate() {
        flood.extend(h.fill_quota(flooder, 100 * (i as u128 + 1)));
    }
    let holder = flood[0];
    h.apply_as(
        &flooders[0],
        seq(Uuid::from_u128(100), 2, 2),
        acquire("m", "f", holder, Mode::Exclusive, false),
    );
    assert_eq!(h.state.clients().count(), CAPACITY);

    let honest = at("10.0.0.1");
    let grant = Command::GrantLease(GrantLease { ttl_ms: 1_000 });
    let refused = h.apply_as(&honest, seq(Uuid::from_u128(1), 1, 1), grant.clone());
    assert_eq!(
        refused,
        Response::Rejected(CommandError::TooManyClients(CAPACITY))
    );

    let admin = at("10.0.0.9");
    let released = h.apply_as(&admin, seq(Uuid::from_u128(9), 1, 1), force_release("m"));
    assert!(
        matches!(released, Response::ForceReleased { .. }),
        "{released:?}"
    );
    assert!(h.state.lock("m").is_none(), "the flood's hold is gone");
    let (reply, _) = h.run_request(Request {
        origin: Some(anonymous(10)),
        caller: admin.clone(),
        time_ms: 0,
        command: Command::ExpireLeases(ExpireLeases { ids: vec![] }),
    });
    assert!(!matches!(reply, Response::Rejected(_)), "{reply:?}");
    let revoked = h.apply_as(
        &admin,
        seq(Uuid::from_u128(11), 1, 1),
        revoke_all(&flooders[0]),
    );
    assert_eq!(
        revoked,
        Response::AccountLeasesRevoked {
            revoked: CAPACITY as u32 / 2,
            released: 0,
            remaining: 0,
        }
    );
    assert_eq!(h.state.clients().count(), CAPACITY, "no place was taken");
    for client in [9, 10, 11] {
        assert!(h
            .state
            .client(Some(&account_of(&admin)), &Uuid::from_u128(client))
            .is_none());
    }

    // The revoked flooder's clients are unpinned: the honest client gets in.
    h.pinned_lease(&honest, 1);
    assert_eq!(h.state.clients().count(), CAPACITY);
}

/// An account at its client quota, every client pinned (an operator on the
/// flooding host, or behind its NAT): a new client id is refused, but the
/// account's own revoke and a call without a request id are applied, and
/// the account never holds more than its quota; the revoke's next request
/// under the same client id is applied too. Without the exemption both
/// are refused `QuotaExceeded` and the host cannot clean up after itself.
#[test]
fn recovery_is_applied_for_an_account_at_its_client_quota() {
    let mut h = Harness::new();
    h.quotas = quotas(3);
    let host = at("10.0.0.2");
    h.fill_quota(&host, 1);
    let grant = Command::GrantLease(GrantLease { ttl_ms: 1_000 });
    let refused = h.apply_as(&host, seq(Uuid::from_u128(50), 1, 1), grant);
    assert!(
        matches!(
            refused,
            Response::Rejected(CommandError::QuotaExceeded {
                quota: Quota::Clients,
                ..
            })
        ),
        "{refused:?}"
    );
    let (reply, _) = h.run_request(Request {
        origin: Some(anonymous(51)),
        caller: host.clone(),
        time_ms: 0,
        command: Command::GrantLease(GrantLease { ttl_ms: 1_000 }),
    });
    assert!(matches!(reply, Response::LeaseGranted { .. }), "{reply:?}");
    let revoked = h.apply_as(&host, seq(Uuid::from_u128(52), 1, 1), revoke_all(&host));
    assert_eq!(
        revoked,
        Response::AccountLeasesRevoked {
            revoked: 4,
            released: 0,
            remaining: 0,
        }
    );
    assert_eq!(h.state.account_use(&account_of(&host)).clients, 3);
    // The same client's next revoke, which says it had a reply, is applied
    // again rather than refused as a forgotten session.
    let again = h.apply_as(&host, seq(Uuid::from_u128(52), 2, 2), revoke_all(&host));
    assert!(
        matches!(again, Response::AccountLeasesRevoked { revoked: 0, .. }),
        "{again:?}"
    );
}

/// A call without a request id takes a free place when there is one (so
/// the cluster's own re-sends of it are still applied once), and counts
/// against its account like any client id.
#[test]
fn a_call_without_a_request_id_takes_only_a_free_place() {
    let mut h = Harness::new();
    h.quotas = quotas(2);
    let host = at("10.0.0.2");
    let noop = Command::ExpireLeases(ExpireLeases { ids: vec![] });
    for client in 1..=3 {
        h.run_request(Request {
            origin: Some(anonymous(client)),
            caller: host.clone(),
            time_ms: 0,
            command: noop.clone(),
        });
    }
    assert_eq!(h.state.account_use(&account_of(&host)).clients, 2);
}

/// Every address of one IPv6 /64 is one account: a host cycling through
/// its addresses meets one lease quota, and the next /64 has its own. An
/// IPv4 address mapped into IPv6 is the IPv4 account. Without the mask in
/// `Caller::unauthenticated`, each address is a fresh account and the
/// third grant succeeds.
#[test]
fn an_ipv6_network_is_one_account() {
    let mut h = Harness::new();
    h.quotas = Quotas {
        leases: 2,
        ..quotas(100)
    };
    let grant = Command::GrantLease(GrantLease { ttl_ms: 1_000 });
    for (i, addr) in ["2001:db8:1:2::1", "2001:db8:1:2::2"].iter().enumerate() {
        h.pinned_lease(&at(addr), i as u128 + 1);
    }
    let third = h.apply_as(
        &at("2001:db8:1:2:ffff::3"),
        seq(Uuid::from_u128(3), 1, 1),
        grant.clone(),
    );
    let Response::Rejected(refusal @ CommandError::QuotaExceeded { .. }) = third else {
        panic!("a third address of the /64 was granted: {third:?}");
    };
    assert!(
        refusal
            .to_string()
            .starts_with("source 2001:db8:1:2::/64 holds 2 leases"),
        "{refusal}"
    );
    h.pinned_lease(&at("2001:db8:1:3::1"), 4);
    assert_eq!(at("::ffff:10.0.0.7"), at("10.0.0.7"));
    assert_eq!(at("::ffff:10.0.0.7").source, Some([10, 0, 0, 7].into()));
}

/// The table is sized past the most leases that can live, and only a live
/// lease pins a client: so however many accounts sit at their quotas, a
/// place can always be made. (The tests above shrink the table to break
/// this on purpose.)
#[test]
fn the_table_outgrows_the_lease_bound() {
    const { assert!(MAX_CLIENT_SESSIONS > MAX_LEASES) };
    let default = Quotas::default();
    assert!(
        (MAX_CLIENT_SESSIONS - MAX_LEASES) >= 10 * default.clients as usize,
        "ten accounts at the default quota fit beside every pinned client"
    );
}
