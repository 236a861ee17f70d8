//! Why a peer message is refused ([`Refusal`]), each reason with the
//! values that made it one. The words go to the sender and the log.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use uuid::Uuid;

use raftlock_storage::NodeId;

use super::Source;

/// Why a peer message is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("malformed envelope: {0}")]
    Malformed(Malformed),
    #[error("message for cluster {theirs}, this node belongs to cluster {ours}")]
    ForeignCluster { ours: String, theirs: String },
    #[error("message for node {to}, this is node {ours}")]
    WrongNode { to: NodeId, ours: NodeId },
    #[error("node {from} is not a member of this cluster")]
    NotMember { from: NodeId },
    #[error(
        "two processes claim node id {from}: {active} spoke {ago:?} ago, and {other} now; \
         refusing the second (a copied data dir started as a second member?)"
    )]
    Duplicate {
        from: NodeId,
        active: Box<SeenProcess>,
        other: Box<SeenProcess>,
        ago: Duration,
    },
    #[error(
        "node {from} came back with an older data dir (boot {boot}, after boot {seen} \
         from {seen_at}); refusing it: a node restored from a copy can lose votes and \
         entries it acknowledged"
    )]
    Rollback {
        from: NodeId,
        boot: u64,
        seen: u64,
        seen_at: Box<SeenProcess>,
    },
    #[error("not authenticated: {0}")]
    Unauthenticated(Unauthenticated),
    #[error(
        "node {from} claims boot {boot}, implausibly far above {}",
        seen.map_or_else(|| "any real data dir's".to_string(), |s| format!("boot {s} seen from it"))
    )]
    ImplausibleBoot {
        from: NodeId,
        boot: u64,
        seen: Option<u64>,
    },
    #[error("too many distinct senders")]
    TooManySenders,
    #[error("the certificate of node {certified} claims to send as node {claimed}")]
    CertificateMismatch { certified: NodeId, claimed: NodeId },
    #[error("its {what} fails a check: {why}")]
    Content {
        what: &'static str,
        why: super::content_refusal::ContentRefusal,
    },
    #[error("cannot record the cluster id: {0}")]
    Storage(Source),
}

/// A process seen speaking as a node, as a refusal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeenProcess {
    /// This node's own process.
    This,
    /// Another process sending as this node.
    Another,
    /// The process at `remote` (`None`: an unknown address) on its
    /// `boot`th start, `incarnation` its run's id.
    At {
        remote: Option<SocketAddr>,
        boot: u64,
        incarnation: Uuid,
    },
}

impl fmt::Display for SeenProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeenProcess::This => f.write_str("this process"),
            SeenProcess::Another => f.write_str("another process"),
            SeenProcess::At {
                remote,
                boot,
                incarnation,
            } => {
                match remote {
                    Some(addr) => write!(f, "{addr}")?,
                    None => f.write_str("an unknown address")?,
                }
                write!(f, " (boot {boot}, incarnation {incarnation})")
            }
        }
    }
}

/// How an envelope is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// The incarnation is not a UUID's 16 bytes.
    #[error("incarnation is not 16 bytes")]
    Incarnation,
    /// The sender or receiver is node 0, which no node is.
    #[error("node id 0")]
    ZeroNodeId,
    /// The cluster id `text` does not parse as a UUID.
    #[error("cluster id {text:?} is not a UUID")]
    ClusterId { text: String },
}

/// Why a message's tag does not authenticate it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unauthenticated {
    /// The request carries no tag.
    #[error(
        "the message carries no tag: is the sender started with --insecure, or without the \
         cluster's join token?"
    )]
    NoTag,
    /// The request's tag is not this cluster's.
    #[error(
        "the tag does not match this cluster's secret (another join token, or a forged or \
         altered message)"
    )]
    TagMismatch,
    /// The request was sent `skew` away from this node's clock, more than
    /// `window` allows.
    #[error(
        "sent {} s away from this node's clock (more than {} s): a replayed message, or \
         clocks that disagree",
        skew.as_secs(),
        window.as_secs()
    )]
    Replay { skew: Duration, window: Duration },
    /// The reply's tag is not this cluster's.
    #[error("the reply's tag does not match this cluster's secret")]
    ReplyTag,
}
