//! The envelope on the way out: every message this node sends carries
//! the cluster id, sender, receiver, boot count, incarnation and sending
//! time, tagged with the cluster secret when there is one (a reply bound to
//! its request's tag). Apart from the checks on the way in, which read
//! what a peer's guard wrote here.

use uuid::Uuid;

use raftlock_storage::NodeId;

use crate::clock::wall_clock_ms;
use crate::pb::Blob;
use crate::peer::auth::Direction;

use super::PeerGuard;

impl PeerGuard {
    /// The answer to an identify request (already authenticated): who this
    /// node is, without the incarnation (which stays between members).
    pub fn identify(&self, data: Vec<u8>, request: &Blob) -> Blob {
        let mut reply = Blob {
            incarnation: Uuid::nil().as_bytes().to_vec(),
            ..self.envelope(0, data)
        };
        self.tag(&mut reply, "identify", Direction::Reply, &request.mac);
        reply
    }

    /// Wraps `data` as a request on `rpc` for node `to`, tagged.
    pub fn seal(&self, rpc: &str, to: NodeId, data: Vec<u8>) -> Blob {
        let mut blob = self.envelope(to, data);
        self.tag(&mut blob, rpc, Direction::Request, &[]);
        blob
    }

    /// Wraps `data` as the reply on `rpc` to `request` from node `to`,
    /// tagged and bound to the request's tag.
    pub fn seal_reply(&self, rpc: &str, to: NodeId, data: Vec<u8>, request: &Blob) -> Blob {
        let mut blob = self.envelope(to, data);
        self.tag(&mut blob, rpc, Direction::Reply, &request.mac);
        blob
    }

    fn envelope(&self, to: NodeId, data: Vec<u8>) -> Blob {
        Blob {
            data,
            cluster_id: self.cluster_id().map(|c| c.to_string()).unwrap_or_default(),
            from: self.id,
            to,
            boot: self.boot,
            incarnation: self.incarnation.as_bytes().to_vec(),
            mac: Vec::new(),
            sent_at_ms: wall_clock_ms(),
        }
    }

    fn tag(&self, blob: &mut Blob, rpc: &str, direction: Direction, bound: &[u8]) {
        if let Some(key) = &self.key {
            blob.mac = key.tag(rpc, direction, blob, bound);
        }
    }
}
