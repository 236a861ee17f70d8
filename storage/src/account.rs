//! Accounts: whom a client request is charged to. Quotas (leases, client
//! ids with a live lease, waiters) are counted per account, and the
//! exactly-once reply table keeps each account's client ids apart.
//!
//! The node that takes a call decides the account from the connection, never
//! from anything the client sends: the authenticated identity, or without
//! authentication the source IP address. The account travels in the
//! replicated request ([`Caller`](crate::Caller)), so every replica counts
//! alike.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Whom a request is charged to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Account {
    /// An authenticated identity (a token's user, a certificate's name).
    Identity(String),
    /// The source address of a caller on a node without authentication.
    Source(IpAddr),
}

impl Account {
    /// The account of an unauthenticated caller at `addr`. An IPv4 address
    /// mapped into IPv6 (`::ffff:a.b.c.d`, from a dual-stack listener) is
    /// the IPv4 address, so one machine is one account on any listener.
    pub fn source(addr: IpAddr) -> Account {
        Account::Source(addr.to_canonical())
    }
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Account::Identity(name) => write!(f, "identity {name}"),
            Account::Source(addr) => write!(f, "source {addr}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_names_its_kind() {
        assert_eq!(
            Account::Identity("billing".into()).to_string(),
            "identity billing"
        );
        let mapped: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
        assert_eq!(Account::source(mapped).to_string(), "source 10.0.0.7");
    }
}
