//! Accounts: whom a client request is charged to. Quotas (leases, client
//! ids with a live lease, waiters) are counted per account, and the
//! exactly-once reply table keeps each account's client ids apart.
//!
//! The node that takes a call decides the account from the connection, never
//! from anything the client sends: the authenticated identity, or without
//! authentication the source address, an IPv6 one by its /64 network
//! ([`source_network`]). The account travels in the replicated request
//! ([`Caller`](crate::Caller)), so every replica counts alike.

use std::net::{IpAddr, Ipv6Addr};

use serde::{Deserialize, Serialize};

/// Whom a request is charged to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Account {
    /// An authenticated identity (a token's user, a certificate's name).
    Identity(String),
    /// The source address of a caller on a node without authentication.
    Source(IpAddr),
}

/// Leading bits of an IPv6 source address that make its account. A /64 is
/// the smallest network a site is given, and one host may take any of its
/// 2^64 addresses: counted per address, one host would be countless
/// accounts.
pub const IPV6_ACCOUNT_BITS: u32 = 64;

/// The address an unauthenticated caller at `addr` is counted by: an IPv4
/// address as is (one mapped into IPv6, `::ffff:a.b.c.d` from a dual-stack
/// listener, is that IPv4 address), an IPv6 address its /64 network.
pub fn source_network(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let mask = u128::MAX << (128 - IPV6_ACCOUNT_BITS);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

impl Account {
    /// The account of an unauthenticated caller at `addr`: its
    /// [`source_network`], so one machine is one account on any listener
    /// and at any address of its IPv6 network.
    pub fn source(addr: IpAddr) -> Account {
        Account::Source(source_network(addr))
    }
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Account::Identity(name) => write!(f, "identity {name}"),
            Account::Source(IpAddr::V4(addr)) => write!(f, "source {addr}"),
            Account::Source(IpAddr::V6(addr)) => {
                write!(f, "source {addr}/{IPV6_ACCOUNT_BITS}")
            }
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
        let v6: IpAddr = "2001:db8:1:2:a:b:c:d".parse().unwrap();
        assert_eq!(Account::source(v6).to_string(), "source 2001:db8:1:2::/64");
    }

    /// Every address of one IPv6 /64 is one account; the next /64 is
    /// another; IPv4, mapped or not, is counted per address. Without the
    /// mask, the two addresses of one /64 are two accounts.
    #[test]
    fn an_ipv6_source_counts_by_its_64() {
        let at = |s: &str| Account::source(s.parse().unwrap());
        assert_eq!(
            at("2001:db8:1:2::5"),
            at("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_ne!(at("2001:db8:1:2::5"), at("2001:db8:1:3::5"));
        assert_eq!(at("::ffff:10.0.0.7"), at("10.0.0.7"));
        assert_ne!(at("10.0.0.7"), at("10.0.0.8"));
    }
}
