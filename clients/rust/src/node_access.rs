//! A client of a node in this process: made from the [`NodeAccess`] the
//! node hands out (`raftlock::Node::access`), with the node's TLS identity
//! or the cluster's admin credential, as the embedding application is
//! trusted with its cluster.

use raftlock_api::{NodeAccess, NodeAccessTls};

use crate::error::Error;
use crate::{Client, ClientOptions, ClientTls};

impl Client {
    /// A client of the node `access` describes, as an embedding application
    /// uses it: any node accepts any call and forwards to the Raft leader,
    /// so talking to the local one is enough. With TLS it trusts the
    /// cluster CA, checks that it reached this node (`node-ID.raftlock`)
    /// and presents the node's own certificate; with a join token it sends
    /// the cluster's admin credential. Either makes it an admin.
    ///
    /// ```no_run
    /// # async fn demo(node: raftlock_api::NodeAccess) -> Result<(), raftlock_client::Error> {
    /// // `node` is `raftlock::Node::access()` of a node this program started.
    /// let client = raftlock_client::Client::for_node(node).await?;
    /// let lease = client.grant_lease(std::time::Duration::from_secs(10)).await?;
    /// # let _ = lease;
    /// # Ok(()) }
    /// ```
    pub async fn for_node(access: NodeAccess) -> Result<Client, Error> {
        let endpoint = access.endpoint.clone();
        Client::connect_with([endpoint], ClientOptions::for_node(access)).await
    }
}

impl ClientOptions {
    /// The default options with the TLS settings and admin credential of
    /// [`Client::for_node`], for a caller that changes some of the rest.
    pub fn for_node(access: NodeAccess) -> ClientOptions {
        ClientOptions {
            tls: access.tls.map(ClientTls::from),
            token: access.token,
            ..ClientOptions::default()
        }
    }
}

impl From<NodeAccessTls> for ClientTls {
    fn from(tls: NodeAccessTls) -> ClientTls {
        ClientTls {
            ca_pem: Some(tls.ca_pem),
            identity: Some((tls.cert_pem, tls.key_pem)),
            server_name: Some(tls.server_name),
        }
    }
}
