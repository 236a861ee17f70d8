//! Why an attempt failed before any node answered it: nothing listens at
//! the address, a TLS handshake was refused (an expired or not yet valid
//! certificate, an untrusted one), or only one side speaks TLS.
//!
//! [`classify`] reads the error chain that tonic, hyper and rustls leave
//! under a status made on this side (a status a node sent has none);
//! `wording`'s [`Failures`] keeps what each endpoint of one call failed
//! with, and words the outcome as an [`Error`](crate::Error) that names the
//! addresses and the next step, in the terms of the caller's front end
//! ([`SettingNames`](crate::SettingNames)). Everything the client says
//! about a failed connection is said in this module.

use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use rustls::{AlertDescription, CertificateError, InvalidMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tonic::Status;

use crate::cert_validity::{from_unix, CertValidity, Standing};

mod wording;

pub(crate) use wording::Failures;

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
    /// The node ended the handshake with an alert that refuses the
    /// certificate this client presented (signed by another CA, say): the
    /// alert's name, as rustls gives it (`DecryptError`, `UnknownCA`,
    /// `BadCertificate`).
    OwnCertificateRefused { alert: String },
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
    /// The certificate the client presented, if any (its dates, when
    /// they could be read).
    pub own_cert: Option<CertValidity>,
    /// The client presented a certificate.
    pub presents_cert: bool,
}

/// The TLS alerts with which a node refuses the client's certificate
/// (`DecryptError`: its signature does not verify against the node's CA,
/// which is what a certificate from another CA gets).
const REFUSED_CERT_ALERTS: [&str; 7] = [
    "BadCertificate",
    "UnsupportedCertificate",
    "CertificateRevoked",
    "CertificateUnknown",
    "UnknownCA",
    "DecryptError",
    "AccessDenied",
];

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
    let refused = attempted
        .presents_cert
        .then(|| refusal_alert(&chain))
        .flatten();
    let found = match find::<rustls::Error>(&chain) {
        _ if refused.is_some() => refused,
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

/// The alert a node ended the handshake with, if it refuses the client's
/// certificate: rustls' error, or its words (`received fatal alert:
/// DecryptError`) where only those reach this side.
fn refusal_alert(chain: &[&(dyn StdError + 'static)]) -> Option<Failure> {
    if let Some(rustls::Error::AlertReceived(alert)) = find::<rustls::Error>(chain) {
        return refused_cert(&format!("{alert:?}"));
    }
    chain.iter().find_map(|e| {
        let text = e.to_string();
        refused_cert(text.strip_prefix("received fatal alert: ")?)
    })
}

/// A refused own certificate, if `alert` is one that refuses it.
fn refused_cert(alert: &str) -> Option<Failure> {
    REFUSED_CERT_ALERTS
        .contains(&alert)
        .then(|| Failure::OwnCertificateRefused {
            alert: alert.to_string(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_a_node_sent_is_no_connect_failure() {
        let status = Status::unavailable("no leader elected");
        assert_eq!(
            read(&status, &Attempted::default(), SystemTime::now()),
            None
        );
    }
}
