//! The form [`Error`] takes on the peer API: its kind and its words, laid
//! out as the error was before its reasons were typed (postcard encodes a
//! variant by its position, then its fields). Nodes of different builds
//! meet during a rolling upgrade, and each must read the other's refusals;
//! the words are what the follower hands on to its client anyway. A
//! received error keeps its kind (so retrying and status codes are as on
//! the leader) and becomes the `Relayed` reason of that kind, the words
//! its source ([`PeerWords`]).
//!
//! The order and shapes below are frozen: a test decodes them with the
//! old definition. A new kind of error is appended, never inserted.

use serde::{Deserialize, Serialize};

use raftlock_storage::{CommandError, NodeId};

use super::{Error, Internal, PeerWords, Unavailable, ValidationError};

/// [`Error`] on the wire.
#[derive(Serialize, Deserialize)]
pub(super) enum WireError {
    Rejected(CommandError),
    NotLeader {
        leader_id: NodeId,
        leader_addr: String,
    },
    Unavailable(String),
    InvalidArgument(String),
    ShuttingDown,
    Internal(String),
}

impl From<Error> for WireError {
    fn from(e: Error) -> Self {
        match e {
            Error::Rejected(c) => WireError::Rejected(c),
            Error::NotLeader {
                leader_id,
                leader_addr,
            } => WireError::NotLeader {
                leader_id,
                leader_addr,
            },
            Error::Unavailable(u) => WireError::Unavailable(u.to_string()),
            Error::InvalidArgument(v) => WireError::InvalidArgument(v.to_string()),
            Error::ShuttingDown => WireError::ShuttingDown,
            Error::Internal(i) => WireError::Internal(i.to_string()),
        }
    }
}

impl From<WireError> for Error {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Rejected(c) => Error::Rejected(c),
            WireError::NotLeader {
                leader_id,
                leader_addr,
            } => Error::NotLeader {
                leader_id,
                leader_addr,
            },
            WireError::Unavailable(words) => Unavailable::Relayed(PeerWords::new(words)).into(),
            WireError::InvalidArgument(words) => {
                ValidationError::Relayed(PeerWords::new(words)).into()
            }
            WireError::ShuttingDown => Error::ShuttingDown,
            WireError::Internal(words) => Internal::Relayed(PeerWords::new(words)).into(),
        }
    }
}

impl Error {
    /// This error as node `node` answered it: a `Relayed` reason learns
    /// who said its words; any other error is as it was.
    pub(crate) fn said_by(self, node: NodeId) -> Self {
        match self {
            Error::Unavailable(Unavailable::Relayed(words)) => {
                Unavailable::Relayed(words.said_by(node)).into()
            }
            Error::InvalidArgument(ValidationError::Relayed(words)) => {
                ValidationError::Relayed(words.said_by(node)).into()
            }
            Error::Internal(Internal::Relayed(words)) => {
                Internal::Relayed(words.said_by(node)).into()
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::{Asked, Problem};
    use crate::peer::payload::{decode, encode};

    /// The error as builds before typed reasons defined it: the layout a
    /// node of such a build writes and reads.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum OldError {
        Rejected(CommandError),
        NotLeader {
            leader_id: NodeId,
            leader_addr: String,
        },
        Unavailable(String),
        InvalidArgument(String),
        ShuttingDown,
        Internal(String),
    }

    fn errors() -> Vec<Error> {
        vec![
            Error::Rejected(CommandError::LeaseNotFound(4)),
            Error::NotLeader {
                leader_id: 2,
                leader_addr: "127.0.0.1:7379".into(),
            },
            Unavailable::QuorumTimeout {
                node: 1,
                waited: Duration::from_secs(3),
            }
            .into(),
            ValidationError::field("request_id.seq", Problem::AtLeast { min: 1 }).into(),
            Error::ShuttingDown,
            Internal::unexpected(Asked::Cancel, 7u64).into(),
        ]
    }

    /// A node of the previous build reads every error this build sends,
    /// with the same kind and words, and this build reads what it sends.
    /// Fails if the wire form follows the typed error (a typed reason
    /// changes the bytes: the old build cannot decode them).
    #[test]
    fn builds_before_typed_reasons_read_our_errors_and_we_theirs() {
        for e in errors() {
            let old: OldError = decode(&encode(&e).unwrap()).unwrap();
            let (kind, words) = match &old {
                OldError::Unavailable(m) => ("unavailable", m.clone()),
                OldError::InvalidArgument(m) => ("invalid argument", m.clone()),
                OldError::Internal(m) => ("internal error", m.clone()),
                other => ("", format!("{other:?}")),
            };
            if !kind.is_empty() {
                assert_eq!(format!("{kind}: {words}"), e.to_string());
            }
            let back: Error = decode(&encode(&old).unwrap()).unwrap();
            assert_eq!(back.to_string(), e.to_string());
            assert_eq!(back.is_retryable(), e.is_retryable(), "{e}");
            assert_eq!(
                std::mem::discriminant(&back),
                std::mem::discriminant(&e),
                "{e}"
            );
        }
    }

    /// A relayed error's words are its reason's source, a [`PeerWords`]:
    /// a caller matches the kind and the `Relayed` reason, and reads the
    /// words by walking `source()`, while the error prints as before.
    /// Fails if a `Relayed` reason holds its words as a plain field (its
    /// `source()` is `None`; seen by dropping one `#[source]`).
    #[test]
    fn relayed_words_are_the_reasons_source() {
        let cases = [
            OldError::Unavailable("no leader elected".into()),
            OldError::InvalidArgument("lease id must be set".into()),
            OldError::Internal("storage failed: disk gone".into()),
        ];
        for old in cases {
            let e: Error = decode(&encode(&old).unwrap()).unwrap();
            assert!(
                matches!(
                    e,
                    Error::Unavailable(Unavailable::Relayed(_))
                        | Error::InvalidArgument(ValidationError::Relayed(_))
                        | Error::Internal(Internal::Relayed(_))
                ),
                "{e:?}"
            );
            let reason = std::error::Error::source(&e).expect("the kind's reason");
            let words = reason
                .source()
                .and_then(|s| s.downcast_ref::<PeerWords>())
                .unwrap_or_else(|| panic!("{e:?}: the reason's source is no PeerWords"));
            let said = match &old {
                OldError::Unavailable(m) | OldError::InvalidArgument(m) | OldError::Internal(m) => {
                    m
                }
                other => panic!("{other:?}"),
            };
            assert_eq!(words.words(), said);
            assert_eq!(words.node(), None);
            assert!(e.to_string().ends_with(&format!(": {said}")), "{e}");
        }
    }

    /// The node a reply came from is named on every `Relayed` reason it
    /// carries, and nothing else changes. Fails if `said_by` leaves the
    /// words without their speaker (seen with `said_by` returning `self`).
    #[test]
    fn a_relayed_reason_names_the_node_that_said_it() {
        let relayed: Vec<Error> = [
            OldError::Unavailable("no leader elected".into()),
            OldError::InvalidArgument("lease id must be set".into()),
            OldError::Internal("storage failed: disk gone".into()),
        ]
        .iter()
        .map(|old| decode(&encode(old).unwrap()).unwrap())
        .collect();
        for e in relayed {
            let named = e.clone().said_by(3);
            assert_eq!(named.to_string(), e.to_string());
            let words = match &named {
                Error::Unavailable(Unavailable::Relayed(w))
                | Error::InvalidArgument(ValidationError::Relayed(w))
                | Error::Internal(Internal::Relayed(w)) => w,
                other => panic!("{other:?}"),
            };
            assert_eq!(words.node(), Some(3), "{named:?}");
        }
        for e in errors() {
            assert_eq!(e.clone().said_by(3), e);
        }
    }
}
