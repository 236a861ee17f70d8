//! Asking who answers at a peer address, with the `Identify` RPC on a
//! connection of its own: the leader before it adds a learner, a starting
//! node before it takes an address its cluster records for its id.

use std::time::Duration;

use raftlock_storage::{NodeAddr, NodeId};

pub use crate::error::probe_fault::{NoAnswer, NoSecret, OtherService};
use crate::error::{PeerWords, Source};
use crate::pb::peer_client::PeerClient;
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
            PeerProbe::NoSecret(NoSecret::Refused(PeerWords::new(status.message())))
        }
        Ok(Err(status)) => PeerProbe::NotPeerPort(OtherService {
            code: status.code(),
            message: PeerWords::new(status.message()),
        }),
        Err(_) => PeerProbe::Unreachable(NoAnswer::Silent(timeout)),
    }
}
