//! Why a request is refused as bad input: the field and the bound it broke
//! ([`Problem`]), a membership change the leader will not make, or bytes
//! that do not decode. Each prints the words a client has always read.

use std::fmt;

use super::peer_words::PeerWords;
use super::MembershipRefusal;
use super::Source;

/// Bad input, refused before it reached the log; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// A field of the request breaks a bound.
    #[error("{}", Named(field, problem))]
    Field {
        /// The field, as the request names it (`request_id.seq`).
        field: &'static str,
        /// What is wrong with it.
        problem: Problem,
    },
    /// The leader will not make this membership change.
    #[error(transparent)]
    Membership(#[from] MembershipRefusal),
    /// openraft refused the membership change (an empty voter set, an
    /// unknown learner, ...).
    #[error("{0}")]
    MembershipRules(Source),
    /// Bytes that do not decode as `what`.
    #[error("malformed {what}: {source}")]
    Malformed {
        /// What the bytes should have been.
        what: &'static str,
        /// The decoder's error.
        source: Source,
    },
    /// Another node's refusal, relayed over the peer API in its words
    /// (the wire carries kind and words; see `wire`).
    #[error("{0}")]
    Relayed(#[source] PeerWords),
    /// A `call` that carries another command than its own.
    #[error("a {call} carries another command")]
    WrongCommand {
        /// The call.
        call: &'static str,
    },
}

impl ValidationError {
    /// `field` breaks `problem`.
    pub fn field(field: &'static str, problem: Problem) -> Self {
        ValidationError::Field { field, problem }
    }
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not exactly `expected` bytes long.
    Length { expected: usize, got: usize },
    /// Not `min..=max` bytes long.
    LengthRange { min: usize, max: usize, got: usize },
    /// Below `min`.
    AtLeast { min: u64 },
    /// Above the field named `bound`.
    NotAbove { bound: &'static str },
    /// Not set (zero or empty); `hint` says how to get a value.
    Unset { hint: Option<&'static str> },
    /// An enum number this build does not know.
    Unknown { value: i64 },
    /// None of the choices the field stands for is given.
    Missing,
    /// `value` does not parse as `kind`.
    NotA { value: String, kind: &'static str },
    /// Set to `got` where it must be 0, `because` of another field.
    NotZero { got: u64, because: &'static str },
    /// Set where another field rules it out, for the reason said.
    RuledOut { rule: &'static str },
}

/// A field and its problem, in words.
struct Named<'a>(&'a &'static str, &'a Problem);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = *self.0;
        match self.1 {
            Problem::Length { expected, got } => {
                write!(f, "{field} must be {expected} bytes, got {got}")
            }
            Problem::LengthRange { min, max, got } => {
                write!(f, "{field} must be {min}..={max} bytes, not {got}")
            }
            Problem::AtLeast { min } => write!(f, "{field} must be at least {min}"),
            Problem::NotAbove { bound } => write!(f, "{field} must not exceed {bound}"),
            Problem::Unset { hint: None } => write!(f, "{field} must be set"),
            Problem::Unset { hint: Some(hint) } => write!(f, "{field} must be set ({hint})"),
            Problem::Unknown { value } => write!(f, "unknown {field} {value}"),
            Problem::Missing => write!(f, "name {field}"),
            Problem::NotA { value, kind } => write!(f, "{field} {value:?} is not {kind}"),
            Problem::NotZero { got, because } => {
                write!(f, "{because}; {field} must be 0, not {got}")
            }
            Problem::RuledOut { rule } => write!(f, "{field} {rule}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of every problem: what clients have always read.
    #[test]
    fn problems_keep_their_words() {
        let cases = [
            (
                "request_id.client_id",
                Problem::Length {
                    expected: 16,
                    got: 2,
                },
                "request_id.client_id must be 16 bytes, got 2",
            ),
            (
                "identity",
                Problem::LengthRange {
                    min: 1,
                    max: 128,
                    got: 0,
                },
                "identity must be 1..=128 bytes, not 0",
            ),
            (
                "request_id.seq",
                Problem::AtLeast { min: 1 },
                "request_id.seq must be at least 1",
            ),
            (
                "request_id.acked_below",
                Problem::NotAbove { bound: "seq" },
                "request_id.acked_below must not exceed seq",
            ),
            (
                "lease id",
                Problem::Unset {
                    hint: Some("grant a lease first"),
                },
                "lease id must be set (grant a lease first)",
            ),
            (
                "lock mode",
                Problem::Unknown { value: 7 },
                "unknown lock mode 7",
            ),
            (
                "the leases' identity or source address",
                Problem::Missing,
                "name the leases' identity or source address",
            ),
            (
                "source",
                Problem::NotA {
                    value: "x".into(),
                    kind: "an IP address",
                },
                "source \"x\" is not an IP address",
            ),
            (
                "lease",
                Problem::NotZero {
                    got: 3,
                    because: "ttl_ms makes the lock a lease of its own",
                },
                "ttl_ms makes the lock a lease of its own; lease must be 0, not 3",
            ),
        ];
        for (field, problem, words) in cases {
            assert_eq!(ValidationError::field(field, problem).to_string(), words);
        }
    }
}
