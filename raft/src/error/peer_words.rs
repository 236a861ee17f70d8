//! [`PeerWords`]: what was said at a peer address, as text. The peer wire
//! carries a relayed error's kind and words, not its typed reason (see
//! `wire`: the layout is frozen for rolling upgrades), and a leader that
//! refuses a forwarded call, or a listener that refuses a probe, answers
//! with a gRPC status message; none can be parsed back into a reason, so
//! the words are kept whole, as the source of the variant that carries
//! them. Apart from the variants so that each error that carries another
//! side's words carries the same type.

use raftlock_storage::NodeId;

/// The words of an error another node (or whatever answered at a peer
/// address) reported, and which node said them where that is known.
/// Prints the words alone, as they were said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{words}")]
pub struct PeerWords {
    /// The error's text, as the other node wrote it.
    words: String,
    /// The node that said them; `None` where the speaker is not known
    /// (a listener that proved no identity, or an error decoded apart
    /// from the reply that carried it).
    node: Option<NodeId>,
}

impl PeerWords {
    /// `words`, from a speaker not known.
    pub fn new(words: impl Into<String>) -> Self {
        PeerWords {
            words: words.into(),
            node: None,
        }
    }

    /// These words, said by node `node`.
    pub fn said_by(self, node: NodeId) -> Self {
        PeerWords {
            node: Some(node),
            ..self
        }
    }

    /// The words, as the other node wrote them.
    pub fn words(&self) -> &str {
        &self.words
    }

    /// The node that said them, where known.
    pub fn node(&self) -> Option<NodeId> {
        self.node
    }
}
