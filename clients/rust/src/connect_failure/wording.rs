//! Failures in words: what each endpoint of one call failed with, and the
//! one error the call ends with, naming the addresses, the dates where
//! known and the next step in the terms of the caller's front end.

use super::Failure;
use crate::cert_validity::{utc, Standing};
use crate::error::Error;
use crate::options::SettingNames;

/// What every endpoint of one call failed with (the latest failure each).
#[derive(Debug)]
pub(crate) struct Failures {
    each: Vec<Option<Failure>>,
}

impl Failures {
    pub fn new(endpoints: usize) -> Self {
        Failures {
            each: vec![None; endpoints],
        }
    }

    pub fn record(&mut self, endpoint: usize, failure: Failure) {
        if let Some(slot) = self.each.get_mut(endpoint) {
            *slot = Some(failure);
        }
    }

    /// Every endpoint failed in a way retrying cannot mend.
    pub fn all_settled(&self) -> bool {
        self.each
            .iter()
            .all(|f| f.as_ref().is_some_and(|f| !f.is_transient()))
    }

    /// The error for a TLS problem some endpoint had, if any: it needs the
    /// user to act, so it is reported before anything else.
    pub fn settled_error(&self, addrs: &[String], names: &SettingNames) -> Option<Error> {
        let worst = self
            .each
            .iter()
            .flatten()
            .filter(|f| !f.is_transient())
            .min_by_key(|f| rank(f))?;
        let at = nodes_at(addrs, &self.each, |f| rank(f) == rank(worst));
        Some(Error::Tls(word(worst, &at, names)))
    }

    /// The error for endpoints that could not be reached, if any.
    pub fn unreachable_error(&self, addrs: &[String], names: &SettingNames) -> Option<Error> {
        let tried: Vec<String> = addrs
            .iter()
            .zip(&self.each)
            .filter_map(|(addr, f)| match f {
                Some(Failure::Unreachable(why)) => Some(format!("{addr} ({why})")),
                _ => None,
            })
            .collect();
        if tried.is_empty() {
            return None;
        }
        Some(Error::Unavailable(format!(
            "cannot reach raftlock at {}: is `raftlock serve` running there? Point {} (or \
             RAFTLOCK_ENDPOINTS) at the client addresses of running nodes",
            tried.join(", "),
            names.endpoints
        )))
    }
}

/// The order in which TLS problems are reported when endpoints differ:
/// the most specific first.
fn rank(f: &Failure) -> u8 {
    match f {
        Failure::OwnCertificate { .. } => 0,
        Failure::OwnCertificateRefused { .. } => 1,
        Failure::NodeCertificate { .. } => 2,
        Failure::NodeSpeaksTls => 3,
        Failure::NodeSpeaksPlain => 4,
        Failure::Handshake(_) => 5,
        Failure::Unreachable(_) => 6,
    }
}

/// Which nodes a message is about.
struct Nodes {
    /// "the node at A" or "the nodes at A, B".
    at: String,
    many: bool,
}

/// The nodes whose failure `pick`s.
fn nodes_at(addrs: &[String], each: &[Option<Failure>], pick: impl Fn(&Failure) -> bool) -> Nodes {
    let which: Vec<&str> = addrs
        .iter()
        .zip(each)
        .filter(|(_, f)| f.as_ref().is_some_and(&pick))
        .map(|(a, _)| a.as_str())
        .collect();
    match which.as_slice() {
        [one] => Nodes {
            at: format!("the node at {one}"),
            many: false,
        },
        many => Nodes {
            at: format!("the nodes at {}", many.join(", ")),
            many: true,
        },
    }
}

/// A TLS problem in words: what is wrong, then what to do.
fn word(f: &Failure, nodes: &Nodes, names: &SettingNames) -> String {
    let (at, cert, key) = (&nodes.at, names.cert, names.key);
    match f {
        Failure::OwnCertificate {
            standing,
            validity,
            now,
        } => {
            let which = match validity {
                Some(v) => format!(
                    "the client certificate {} ({cert}, valid {} to {})",
                    v.subject,
                    utc(v.not_before),
                    utc(v.not_after)
                ),
                None => format!("the client certificate ({cert})"),
            };
            let state = match standing {
                Standing::NotYetValid => "is not valid yet",
                _ => "has expired",
            };
            format!(
                "{which} {state} (this machine's clock says {}), so {at} refused it: make a new \
                 one with `raftlock certs create-client` and pass it with {cert} and {key}, or \
                 check the clocks",
                utc(*now)
            )
        }
        Failure::OwnCertificateRefused { alert } => format!(
            "{at} refused the client certificate ({cert}) in the TLS handshake (alert \
             {alert}): it must be signed by the cluster's CA, the one that signed the nodes' \
             certificates; make one with `raftlock certs create-client --name NAME \
             --certs-dir DIR` where DIR holds the cluster's ca.crt and ca.key, and pass it with \
             {cert} and {key}"
        ),
        Failure::NodeCertificate {
            standing,
            date,
            now,
        } => {
            let when = |what: &str| date.map_or(String::new(), |d| format!(" {what} {}", utc(d)));
            let state = match standing {
                Standing::NotYetValid => format!("is not valid yet{}", when("before")),
                _ => format!("expired{}", when("at")),
            };
            format!(
                "the certificate of {at} {state} (this machine's clock says {}): give the node a \
                 new one (`raftlock certs create-node`) and restart it, or check the clocks",
                utc(*now)
            )
        }
        Failure::NodeSpeaksTls => format!(
            "{at} {} TLS and this client speaks plain text: pass the cluster's CA \
             certificate, {}",
            if nodes.many { "serve" } else { "serves" },
            names.cacert_example
        ),
        Failure::NodeSpeaksPlain => format!(
            "{at} answered in plain text, but this client speaks TLS to {} ({}, {cert} or \
             {key} given, or an https:// endpoint): leave those out for a cluster without TLS, \
             or point {} at a TLS cluster",
            if nodes.many { "them" } else { "it" },
            names.cacert,
            names.endpoints
        ),
        Failure::Handshake(why) => format!(
            "the TLS handshake with {at} failed ({why}): {} must be the CA that signed the \
             nodes' certificates, and each endpoint an address its node's certificate names",
            names.cacert
        ),
        Failure::Unreachable(why) => format!("cannot reach {at} ({why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert_validity::{from_unix, CertValidity};

    fn one_node() -> Nodes {
        Nodes {
            at: "the node at a:1".into(),
            many: false,
        }
    }

    fn addrs(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("127.0.0.1:{i}")).collect()
    }

    #[test]
    fn unreachable_names_every_address_tried_and_the_next_step() {
        let mut failures = Failures::new(2);
        failures.record(0, Failure::Unreachable("connection refused".into()));
        failures.record(1, Failure::Unreachable("timed out connecting".into()));
        assert!(!failures.all_settled());
        assert_eq!(failures.settled_error(&addrs(2), &SettingNames::CLI), None);
        let e = failures
            .unreachable_error(&addrs(2), &SettingNames::CLI)
            .expect("unreachable");
        assert_eq!(
            e.to_string(),
            "unavailable: cannot reach raftlock at 127.0.0.1:1 (connection refused), \
             127.0.0.1:2 (timed out connecting): is `raftlock serve` running there? Point \
             --endpoints (or RAFTLOCK_ENDPOINTS) at the client addresses of running nodes"
        );
        assert!(e.is_retryable());
    }

    #[test]
    fn a_tls_problem_is_reported_before_an_unreachable_node() {
        let mut failures = Failures::new(3);
        failures.record(0, Failure::Unreachable("connection refused".into()));
        failures.record(1, Failure::NodeSpeaksTls);
        failures.record(2, Failure::NodeSpeaksTls);
        assert!(!failures.all_settled());
        let Some(Error::Tls(m)) = failures.settled_error(&addrs(3), &SettingNames::CLI) else {
            panic!("no TLS error");
        };
        assert_eq!(
            m,
            "the nodes at 127.0.0.1:2, 127.0.0.1:3 serve TLS and this client speaks plain \
             text: pass the cluster's CA certificate, --cacert ca.crt"
        );
    }

    #[test]
    fn settled_once_every_endpoint_has_a_tls_problem() {
        let mut failures = Failures::new(2);
        failures.record(0, Failure::NodeSpeaksPlain);
        assert!(!failures.all_settled());
        failures.record(
            1,
            Failure::Handshake("invalid peer certificate: UnknownIssuer".into()),
        );
        assert!(failures.all_settled());
        // The more specific problem is the one reported.
        let Some(Error::Tls(m)) = failures.settled_error(&addrs(2), &SettingNames::CLI) else {
            panic!("no TLS error");
        };
        assert!(
            m.starts_with("the node at 127.0.0.1:1 answered in plain text"),
            "{m}"
        );
    }

    #[test]
    fn words_name_the_front_ends_settings() {
        let python = SettingNames {
            endpoints: "endpoints=",
            cacert: "cacert=",
            cert: "cert=",
            key: "key=",
            cacert_example: "raftlock.Client(..., cacert=\"ca.crt\")",
        };
        let at = one_node();
        let plain = word(&Failure::NodeSpeaksTls, &at, &python);
        assert!(
            plain.ends_with("raftlock.Client(..., cacert=\"ca.crt\")"),
            "{plain}"
        );
        let tls = word(&Failure::NodeSpeaksPlain, &at, &python);
        assert!(tls.contains("(cacert=, cert= or key= given"), "{tls}");
        for m in [plain, tls] {
            assert!(!m.contains("--"), "a flag in {m}");
        }
    }

    #[test]
    fn an_own_certificate_out_of_date_names_it_and_its_dates() {
        let validity = CertValidity {
            subject: "CN=client-admin".into(),
            not_before: from_unix(1_704_067_200),
            not_after: from_unix(1_706_745_600),
        };
        let expired = Failure::OwnCertificate {
            standing: Standing::Expired,
            validity: Some(validity.clone()),
            now: from_unix(1_714_564_800),
        };
        let m = word(&expired, &one_node(), &SettingNames::CLI);
        assert_eq!(
            m,
            "the client certificate CN=client-admin (--cert, valid 2024-01-01T00:00:00Z to \
             2024-02-01T00:00:00Z) has expired (this machine's clock says \
             2024-05-01T12:00:00Z), so the node at a:1 refused it: make a new one with \
             `raftlock certs create-client` and pass it with --cert and --key, or check the \
             clocks"
        );
        let early = Failure::OwnCertificate {
            standing: Standing::NotYetValid,
            validity: Some(validity),
            now: from_unix(0),
        };
        let m = word(&early, &one_node(), &SettingNames::CLI);
        assert!(
            m.contains(") is not valid yet (this machine's clock says 1970"),
            "{m}"
        );
    }

    #[test]
    fn a_refused_client_certificate_names_the_alert_and_the_fix() {
        let mut failures = Failures::new(1);
        let refused = Failure::OwnCertificateRefused {
            alert: "DecryptError".into(),
        };
        failures.record(0, refused);
        assert!(failures.all_settled());
        let Some(Error::Tls(m)) = failures.settled_error(&addrs(1), &SettingNames::CLI) else {
            panic!("no TLS error");
        };
        assert!(
            m.starts_with(
                "the node at 127.0.0.1:1 refused the client certificate (--cert) in the TLS \
                 handshake (alert DecryptError): it must be signed by the cluster's CA"
            ),
            "{m}"
        );
        assert!(m.contains("create-client") && m.contains("--key"), "{m}");
    }

    #[test]
    fn a_node_certificate_out_of_date_gives_its_date() {
        let expired = Failure::NodeCertificate {
            standing: Standing::Expired,
            date: Some(from_unix(1_706_745_600)),
            now: from_unix(1_714_564_800),
        };
        let m = word(&expired, &one_node(), &SettingNames::CLI);
        assert!(
            m.starts_with(
                "the certificate of the node at a:1 expired at 2024-02-01T00:00:00Z (this \
                 machine's clock says 2024-05-01T12:00:00Z): give the node a new one"
            ),
            "{m}"
        );
    }
}
