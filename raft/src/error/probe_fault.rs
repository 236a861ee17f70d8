//! Why a probe of a peer address found no raftlock peer of this cluster
//! there ([`crate::peer::probe`]): nothing answered, a listener without
//! the cluster's secret, or another service.

use std::time::Duration;

use super::dial_error::DialError;
use super::peer_words::PeerWords;
use super::Source;

/// How a peer listener showed it does not hold this cluster's secret.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSecret {
    /// Its answer is not tagged with the secret.
    #[error("its answer is not tagged with this cluster's secret")]
    Untagged,
    /// It refused the request as unauthenticated, in its words (the
    /// status message; the listener proved no identity, so no node is
    /// named).
    #[error("{0}")]
    Refused(#[source] PeerWords),
}

/// The error status of something that is not a raftlock peer port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct OtherService {
    /// The status code (a client port: `Unimplemented`).
    pub code: tonic::Code,
    /// The status message, in that service's words.
    #[source]
    pub message: PeerWords,
}

/// Why nothing answered at a peer address.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAnswer {
    /// The address cannot be dialed.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// The connection failed (the transport's error; the words are its
    /// innermost causes).
    #[error("{}", connect_error(.0))]
    Connect(Source),
    /// Nothing answered within this long.
    #[error("no answer within {0:?}")]
    Silent(Duration),
}

/// A connect error's innermost causes (tonic's own text is "transport
/// error", and its sources repeat each other).
fn connect_error(e: &Source) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        parts.retain(|p| !text.contains(p.as_str()));
        parts.push(text);
        source = cause.source();
    }
    match parts.is_empty() {
        true => e.to_string(),
        false => parts.join(": "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal prints the listener's words as they were, and a caller
    /// reads them from its source. Fails if `Refused` holds the words as
    /// a plain field (its `source()` is `None`; seen by dropping
    /// `#[source]`).
    #[test]
    fn a_refusal_keeps_the_listeners_words_as_its_source() {
        let refused = NoSecret::Refused(PeerWords::new("missing cluster tag"));
        assert_eq!(refused.to_string(), "missing cluster tag");
        let words = std::error::Error::source(&refused)
            .and_then(|s| s.downcast_ref::<PeerWords>())
            .map(PeerWords::words);
        assert_eq!(words, Some("missing cluster tag"));
    }

    /// Another service's status message is its source, as it said it.
    /// Fails if `OtherService` holds its message as a plain field (seen by
    /// dropping `#[source]`).
    #[test]
    fn another_services_words_are_its_source() {
        let other = OtherService {
            code: tonic::Code::Unimplemented,
            message: PeerWords::new("unknown service raftlock.peer.Peer"),
        };
        assert_eq!(
            other.to_string(),
            "Unimplemented: unknown service raftlock.peer.Peer"
        );
        let words = std::error::Error::source(&other)
            .and_then(|s| s.downcast_ref::<PeerWords>())
            .map(PeerWords::words);
        assert_eq!(words, Some("unknown service raftlock.peer.Peer"));
    }
}
