//! Internal faults: a library call that failed (kept with its source) or
//! an invariant that broke (with the values that broke it). A client only
//! learns that the node failed, in these words; operators read the logs.

use std::fmt;

use super::peer_words::PeerWords;
use super::{Dump, Source};

/// A fault inside the node; the call's outcome is its own to report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Internal {
    /// openraft stopped on a storage failure.
    #[error("storage failed: {0}")]
    Storage(Source),
    /// openraft's core task panicked.
    #[error("the Raft core panicked")]
    RaftPanicked,
    /// openraft refused a write on a precondition this node should have
    /// kept.
    #[error("{0}")]
    Precondition(Source),
    /// A step that failed in a library, with its error.
    #[error("{step}: {source}")]
    Failed {
        /// What the node was doing.
        step: Step,
        /// The library's error.
        source: Source,
    },
    /// The state machine answered a batch of `requests` with a different
    /// number of `responses`.
    #[error("entry {index} answered {responses} responses for {requests} requests")]
    ResponseCount {
        /// The entry's log index.
        index: u64,
        /// How many responses came back.
        responses: usize,
        /// How many requests the entry carried.
        requests: usize,
    },
    /// The layer above registered its leader calls twice.
    #[error("a leader service is already registered")]
    LeaderServiceTaken,
    /// The stream of applied entries was taken twice.
    #[error("the replica's applied stream is already taken")]
    AppliedStreamTaken,
    /// Another node's fault, relayed over the peer API in its words (the
    /// wire carries kind and words; see `wire`).
    #[error("{0}")]
    Relayed(#[source] PeerWords),
    /// An answer of a kind the call cannot have.
    #[error("{}", Unexpected(to, answer))]
    Unexpected {
        /// What was asked.
        to: Asked,
        /// The answer.
        answer: Dump,
    },
}

/// A step of the node's that a library call can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The blocking task that copies or encodes a backup.
    BackupWorker,
    /// Copying the applied state for a backup.
    CopyState,
    /// Encoding a backup to its file bytes.
    EncodeBackup,
    /// Encoding a lease call for the leader.
    EncodeLeaseCall,
    /// Decoding the leader's answer to a lease call.
    DecodeLeaseAnswer,
    /// Encoding the answer to a lease call.
    EncodeLeaseAnswer,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::BackupWorker => "backup worker",
            Step::CopyState => "cannot copy the state",
            Step::EncodeBackup => "cannot encode the backup",
            Step::EncodeLeaseCall => "cannot encode a lease call",
            Step::DecodeLeaseAnswer => "the leader's lease answer is malformed",
            Step::EncodeLeaseAnswer => "cannot encode a lease answer",
        })
    }
}

/// A call whose answer can be of the wrong kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A call forwarded to the leader.
    Leader,
    /// A lease call served by the leader.
    LeaseCall,
    /// An Acquire replicated.
    Acquire,
    /// A Cancel replicated.
    Cancel,
    /// Another request replicated.
    StateMachine,
}

impl Internal {
    /// `answer` came back to `to`.
    pub fn unexpected(to: Asked, answer: impl fmt::Debug + Send + Sync + 'static) -> Self {
        Internal::Unexpected {
            to,
            answer: Dump::new(answer),
        }
    }

    /// `step` failed with `source`.
    pub fn failed(step: Step, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Internal::Failed {
            step,
            source: Source::new(source),
        }
    }
}

struct Unexpected<'a>(&'a Asked, &'a Dump);

impl fmt::Display for Unexpected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let answer = self.1;
        match self.0 {
            Asked::Leader => write!(f, "leader answered with an unexpected reply: {answer:?}"),
            Asked::LeaseCall => write!(f, "the leader answered a lease call with {answer:?}"),
            Asked::Acquire => write!(f, "unexpected answer to acquire: {answer:?}"),
            Asked::Cancel => write!(f, "unexpected answer to cancel: {answer:?}"),
            Asked::StateMachine => write!(f, "unexpected state machine answer: {answer:?}"),
        }
    }
}
