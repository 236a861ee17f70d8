//! The state's records as earlier builds wrote them into snapshots and
//! backups, and how they become today's [`StateParts`].
//!
//! Builds of record format 6 before slot shifts ([`StatePartsV6Named`])
//! wrote everything but the shift a restore leaves: they read as today's
//! with none (slots at log positions).
//!
//! Builds of record format 6 before named records ([`StatePartsV6`]) wrote
//! the same leases, locks and sessions, and no named records: they read
//! as today's with none.
//!
//! Builds of record format 5 ([`StatePartsV5`]) kept no accounts.
//! Those builds kept no accounts: leases recorded only the identity that
//! granted them, and client sessions were keyed by client id alone. On
//! reading them:
//! - a lease granted by an identity is charged to that identity; one
//!   granted without authentication is charged to nobody (its source
//!   address was never recorded), so it counts against no quota;
//! - a session whose client granted a live lease is keyed by that lease's
//!   account, so it stays pinned and its retries still replay; any other
//!   session is keyed by no account. A client whose session that leaves
//!   out of reach is told, on its next request, that its session expired
//!   (outcome unknown), and continues under a new client id.

use serde::Deserialize;
use uuid::Uuid;

use super::{ClientSession, Lease, Lock, NamedRecords, SessionKey, SlotShift, StateParts};
use crate::account::Account;

/// [`StateParts`] as format-6 builds before slot shifts encoded it.
#[derive(Debug, Deserialize)]
pub(crate) struct StatePartsV6Named {
    leases: Vec<Lease>,
    locks: Vec<Lock>,
    clients: Vec<(SessionKey, ClientSession)>,
    named: NamedRecords,
}

impl From<StatePartsV6Named> for StateParts {
    fn from(old: StatePartsV6Named) -> StateParts {
        StateParts {
            leases: old.leases,
            locks: old.locks,
            clients: old.clients,
            named: old.named,
            slots: SlotShift::default(),
            retired_nodes: Default::default(),
        }
    }
}

/// [`StateParts`] as format-6 builds before named records encoded it.
#[derive(Debug, Deserialize)]
pub(crate) struct StatePartsV6 {
    leases: Vec<Lease>,
    locks: Vec<Lock>,
    clients: Vec<(SessionKey, ClientSession)>,
}

impl From<StatePartsV6> for StateParts {
    fn from(old: StatePartsV6) -> StateParts {
        StateParts {
            leases: old.leases,
            locks: old.locks,
            clients: old.clients,
            named: NamedRecords::default(),
            slots: SlotShift::default(),
            retired_nodes: Default::default(),
        }
    }
}

/// [`StateParts`] as format-5 builds encoded it.
#[derive(Debug, Deserialize)]
pub(crate) struct StatePartsV5 {
    leases: Vec<LeaseV5>,
    locks: Vec<Lock>,
    clients: Vec<(Uuid, ClientSession)>,
}

/// [`Lease`] as format-5 builds encoded it.
#[derive(Debug, Deserialize)]
struct LeaseV5 {
    id: u64,
    ttl_ms: u64,
    granted_at_ms: u64,
    granted_by: Option<Uuid>,
    #[serde(default)]
    identity: Option<String>,
}

impl From<StatePartsV5> for StateParts {
    fn from(old: StatePartsV5) -> StateParts {
        let leases: Vec<Lease> = old
            .leases
            .into_iter()
            .map(|l| Lease {
                id: l.id,
                ttl_ms: l.ttl_ms,
                granted_at_ms: l.granted_at_ms,
                granted_by: l.granted_by,
                account: l.identity.clone().map(Account::Identity),
                identity: l.identity,
            })
            .collect();
        let mut clients: Vec<(SessionKey, ClientSession)> = old
            .clients
            .into_iter()
            .map(|(client, session)| {
                // Leases are in id order: the oldest lease the client granted.
                let account = leases
                    .iter()
                    .find(|l| l.granted_by == Some(client))
                    .and_then(|l| l.account.clone());
                (SessionKey { account, client }, session)
            })
            .collect();
        clients.sort_by(|a, b| a.0.cmp(&b.0));
        StateParts {
            leases,
            locks: old.locks,
            clients,
            named: NamedRecords::default(),
            slots: SlotShift::default(),
            retired_nodes: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    /// A lease as a format-5 build encoded it: id, TTL, granted at,
    /// granted by, identity.
    type LeaseWrittenV5 = (u64, u64, u64, Option<Uuid>, Option<String>);

    /// What a format-5 build encoded, field for field.
    #[derive(Serialize)]
    struct WrittenV5 {
        leases: Vec<LeaseWrittenV5>,
        locks: Vec<Lock>,
        clients: Vec<(Uuid, ClientSession)>,
    }

    /// A lease granted by `jobs` keeps its identity and is charged to it;
    /// its granter's session is keyed by that account (so the lease still
    /// pins it); a session without a lease is keyed by no account; an
    /// unauthenticated lease is charged to nobody.
    #[test]
    fn format_5_parts_read_as_keyed_sessions() {
        let (granter, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let session = ClientSession {
            last_index: 7,
            ..ClientSession::default()
        };
        let written = WrittenV5 {
            leases: vec![
                (1 << 16, 5_000, 10, Some(granter), Some("jobs".into())),
                (2 << 16, 5_000, 11, None, None),
            ],
            locks: Vec::new(),
            clients: vec![(granter, session.clone()), (other, session.clone())],
        };
        let bytes = postcard::to_stdvec(&written).unwrap();
        let old: StatePartsV5 = postcard::from_bytes(&bytes).unwrap();
        let parts = StateParts::from(old);
        let jobs = Some(Account::Identity("jobs".into()));
        assert_eq!(parts.leases[0].account, jobs);
        assert_eq!(parts.leases[0].identity.as_deref(), Some("jobs"));
        assert_eq!(parts.leases[1].account, None);
        let keys: Vec<_> = parts.clients.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(
            keys,
            [
                SessionKey {
                    account: None,
                    client: other
                },
                SessionKey {
                    account: jobs,
                    client: granter
                },
            ]
        );
    }
}
