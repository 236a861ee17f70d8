//! Asking who answers at a peer address, with the `Identify` RPC on a
//! connection of its own: the leader before it adds a learner, a starting
//! node before it takes an address its cluster records for its id.

use std::time::Duration;

use raftlock_storage::{NodeAddr, NodeId};

use crate::error::Source;
use crate::pb::peer_client::PeerClient;
use crate::peer::dial_error::DialError;
use crate::peer::network::PeerNetwork;
use crate::peer::payload::decode;

/// What answers at an address given as node `expect`'s peer address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerProbe {
    /// A raftlock peer listener, as node `id` on its `boot`th start, of
    /// cluster `cluster_id` (empty: in none yet), serving clients at
    /// `client_addr` (`None` from a node that does not say).
    Node {
        id: NodeId,
        boot: u64,
        cluster_id: String,
        client_addr: Option<String>,
    },
    /// A raftlock peer listener that does not hold this cluster's secret
    /// (started without the join token, or with another).
    NoSecret(NoSecret),
    /// Something that speaks gRPC but not the peer API (a client port).
    NotPeerPort(OtherService),
    /// Nothing answered: nothing listens, or (over TLS) the certificate
    /// is not node `expect`'s.
    Unreachable(NoAnswer),
}

/// How a peer listener showed it does not hold this cluster's secret.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSecret {
    /// Its answer is not tagged with the secret.
    #[error("its answer is not tagged with this cluster's secret")]
    Untagged,
    /// It refused the request as unauthenticated, in its words.
    #[error("{0}")]
    Refused(String),
}

/// The error status of something that is not a raftlock peer port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct OtherService {
    /// The status code (a client port: `Unimplemented`).
    pub code: tonic::Code,
    /// The status message, in that service's words.
    pub message: String,
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

/// Asks who answers at `addr` for node `expect` (over TLS the handshake
/// accepts only node `expect`'s certificate); a probe of a wrong address
/// leaves no channel behind.
pub async fn probe(net: &PeerNetwork, expect: NodeId, addr: &str, timeout: Duration) -> PeerProbe {
    let endpoint = match net.endpoint(expect, addr) {
        Ok(endpoint) => endpoint.timeout(timeout),
        Err(e) => return PeerProbe::Unreachable(NoAnswer::Dial(e)),
    };
    let channel = match tokio::time::timeout(timeout, endpoint.connect()).await {
        Ok(Ok(channel)) => channel,
        Ok(Err(e)) => return PeerProbe::Unreachable(NoAnswer::Connect(Source::new(e))),
        Err(_) => return PeerProbe::Unreachable(NoAnswer::Silent(timeout)),
    };
    let sealed = net.guard().seal("identify", 0, Vec::new());
    let req = tonic::Request::new(sealed.clone());
    match tokio::time::timeout(timeout, PeerClient::new(channel).identify(req)).await {
        Ok(Ok(reply)) => {
            let reply = reply.into_inner();
            if !net.guard().is_identify_reply(&reply, &sealed) {
                return PeerProbe::NoSecret(NoSecret::Untagged);
            }
            PeerProbe::Node {
                id: reply.from,
                boot: reply.boot,
                cluster_id: reply.cluster_id,
                client_addr: decode::<NodeAddr>(&reply.data).ok().map(|a| a.client_addr),
            }
        }
        Ok(Err(status)) if status.code() == tonic::Code::Unauthenticated => {
            PeerProbe::NoSecret(NoSecret::Refused(status.message().to_owned()))
        }
        Ok(Err(status)) => PeerProbe::NotPeerPort(OtherService {
            code: status.code(),
            message: status.message().to_owned(),
        }),
        Err(_) => PeerProbe::Unreachable(NoAnswer::Silent(timeout)),
    }
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
