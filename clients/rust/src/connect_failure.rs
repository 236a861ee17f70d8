//! Why an attempt failed before any node answered it: nothing listens at
//! the address, a TLS handshake was refused (an expired or not yet valid
//! certificate, an untrusted one), or only one side speaks TLS.
//!
//! [`classify`] reads the error chain that tonic, hyper and rustls leave
//! under a status made on this side (a status a node sent has none);
//! [`Failures`] keeps what each endpoint of one call failed with, and words
//! the outcome as an [`Error`] that names the addresses and the next step,
//! in the terms of the caller's front end ([`SettingNames`]). Everything
//! the client says about a failed connection is said here.

use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use rustls::{AlertDescription, CertificateError, InvalidMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tonic::Status;

use crate::cert_validity::{from_unix, utc, CertValidity, Standing};
use crate::error::Error;
use crate::options::SettingNames;

/// What one endpoint failed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No connection: the operating system's reason (`connection
    /// refused`, `timed out connecting`).
    Unreachable(String),
    /// This client speaks plain text and the node answered with something
    /// that is not HTTP/2: a node that serves TLS.
    NodeSpeaksTls,
    /// This client speaks TLS and the node answered in plain text.
    NodeSpeaksPlain,
    /// The node's certificate is outside its validity window by this
    /// machine's clock: `date` is its not-after (expired) or not-before.
    NodeCertificate {
        standing: Standing,
        date: Option<SystemTime>,
        now: SystemTime,
    },
    /// The node refused this client's certificate as expired or not yet
    /// valid (its TLS alert, or this client's own reading of the dates).
    OwnCertificate {
        standing: Standing,
        validity: Option<CertValidity>,
        now: SystemTime,
    },
    /// Any other refused handshake (a certificate from another CA, an
    /// address the node's certificate does not name): rustls' reason.
    Handshake(String),
}

impl Failure {
    /// Whether another try may succeed without the user changing anything
    /// (a node restarting); a TLS problem stays until they do.
    pub fn is_transient(&self) -> bool {
        matches!(self, Failure::Unreachable(_))
    }
}

/// What `classify` needs to know about the attempt's endpoint.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attempted {
    /// The client spoke TLS to it.
    pub tls: bool,
    /// The certificate the client presented, if any.
    pub own_cert: Option<CertValidity>,
}

/// How long the check whether a node serves TLS may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The failure under `status` of an attempt on `addr`, or `None` if a node
/// sent the status (or it says nothing this module can tell).
pub(crate) async fn classify(
    status: &Status,
    attempted: &Attempted,
    addr: &str,
) -> Option<Failure> {
    match read(status, attempted, SystemTime::now())? {
        Reading::Failure(failure) => Some(failure),
        // A plain-text client's bytes make a TLS node send an alert and
        // hang up; this side then sees a broken HTTP/2 connection or pipe,
        // as it may when a node dies. Ask the node which it was.
        Reading::MaybeTls => serves_tls(addr).await.then_some(Failure::NodeSpeaksTls),
    }
}

/// What the error chain under a status says.
#[derive(Debug, PartialEq, Eq)]
enum Reading {
    Failure(Failure),
    /// A plain-text connection broke as one to a TLS node does.
    MaybeTls,
}

fn read(status: &Status, attempted: &Attempted, now: SystemTime) -> Option<Reading> {
    let chain = causes(status);
    if chain.is_empty() {
        return None;
    }
    let found = match find::<rustls::Error>(&chain) {
        Some(tls) => from_rustls(tls, now),
        None if is_connect_error(&chain) => Some(Failure::Unreachable(connect_reason(&chain))),
        None if !attempted.tls && broke_off(&chain) => return Some(Reading::MaybeTls),
        None => None,
    };
    if matches!(found, Some(Failure::Unreachable(_))) {
        return found.map(Reading::Failure);
    }
    // A node may end a handshake it refused without saying why (or say it
    // only after this side thought the handshake done): if the client's
    // certificate is out of date by this machine's clock, that is why.
    let Some(own) = &attempted.own_cert else {
        return found.map(Reading::Failure);
    };
    let failure = match (own.standing(now), found) {
        (Standing::Valid, Some(Failure::OwnCertificate { standing, now, .. })) => {
            // The node's clock disagrees with this one's: give the dates.
            Some(Failure::OwnCertificate {
                standing,
                validity: Some(own.clone()),
                now,
            })
        }
        (Standing::Valid, found) => found,
        (standing, _) => Some(Failure::OwnCertificate {
            standing,
            validity: Some(own.clone()),
            now,
        }),
    };
    failure.map(Reading::Failure)
}

/// Whether an established connection broke: an HTTP/2 error of this side
/// (it read something that is not HTTP/2), or the node hung up.
fn broke_off(chain: &[&(dyn StdError + 'static)]) -> bool {
    use std::io::ErrorKind;
    let h2_error = find::<h2::Error>(chain).is_some_and(|e| e.is_go_away() && e.is_library());
    let hung_up = find::<std::io::Error>(chain).is_some_and(|e| {
        matches!(
            e.kind(),
            ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof
        )
    });
    h2_error || hung_up
}

/// Whether the node at `addr` answers the start of a plain-text HTTP/2
/// connection with a TLS record (the alert a TLS server sends).
async fn serves_tls(addr: &str) -> bool {
    let probe = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .ok()?;
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).await.ok()?;
        // Content type alert (21) or handshake (22), major version 3.
        Some(matches!(head, [21 | 22, 3]))
    };
    matches!(timeout(PROBE_TIMEOUT, probe).await, Ok(Some(true)))
}

/// A rustls error as a failure; `None` for those this module does not
/// word (a refused client certificate for another reason, say).
fn from_rustls(e: &rustls::Error, now: SystemTime) -> Option<Failure> {
    let node = |standing, date| Failure::NodeCertificate {
        standing,
        date,
        now,
    };
    let own = |standing| Failure::OwnCertificate {
        standing,
        validity: None,
        now,
    };
    Some(match e {
        rustls::Error::InvalidCertificate(cert) => match cert {
            CertificateError::ExpiredContext { time, not_after } => Failure::NodeCertificate {
                standing: Standing::Expired,
                date: Some(from_unix(unix(not_after))),
                now: from_unix(unix(time)),
            },
            CertificateError::NotValidYetContext { time, not_before } => Failure::NodeCertificate {
                standing: Standing::NotYetValid,
                date: Some(from_unix(unix(not_before))),
                now: from_unix(unix(time)),
            },
            CertificateError::Expired => node(Standing::Expired, None),
            CertificateError::NotValidYet => node(Standing::NotYetValid, None),
            other => Failure::Handshake(format!("the node's certificate: {other}")),
        },
        rustls::Error::AlertReceived(AlertDescription::CertificateExpired) => {
            own(Standing::Expired)
        }
        rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType) => {
            Failure::NodeSpeaksPlain
        }
        rustls::Error::AlertReceived(_) => return None,
        other => Failure::Handshake(other.to_string()),
    })
}

fn unix(t: &rustls_pki_types::UnixTime) -> i64 {
    i64::try_from(t.as_secs()).unwrap_or(i64::MAX)
}

/// Every error under `status`, outermost first. An `io::Error` hides the
/// error it wraps from `source()` (it answers that error's source), so
/// the walk steps into it by hand.
fn causes(status: &Status) -> Vec<&(dyn StdError + 'static)> {
    let mut chain = Vec::new();
    let mut next = status.source();
    while let Some(e) = next {
        chain.push(e);
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    chain
}

fn find<'a, T: StdError + 'static>(chain: &[&'a (dyn StdError + 'static)]) -> Option<&'a T> {
    chain.iter().find_map(|e| e.downcast_ref::<T>())
}

fn is_connect_error(chain: &[&(dyn StdError + 'static)]) -> bool {
    find::<tonic::ConnectError>(chain).is_some()
}

/// The operating system's reason a connection was not made.
fn connect_reason(chain: &[&(dyn StdError + 'static)]) -> String {
    use std::io::ErrorKind;
    let Some(io) = find::<std::io::Error>(chain) else {
        return chain.last().map_or_else(String::new, |e| e.to_string());
    };
    match io.kind() {
        ErrorKind::ConnectionRefused => "connection refused".into(),
        ErrorKind::TimedOut => "timed out connecting".into(),
        _ => io.to_string(),
    }
}

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
        Failure::NodeCertificate { .. } => 1,
        Failure::NodeSpeaksTls => 2,
        Failure::NodeSpeaksPlain => 3,
        Failure::Handshake(_) => 4,
        Failure::Unreachable(_) => 5,
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
    fn a_status_a_node_sent_is_no_connect_failure() {
        let status = Status::unavailable("no leader elected");
        assert_eq!(
            read(&status, &Attempted::default(), SystemTime::now()),
            None
        );
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
