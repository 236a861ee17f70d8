//! One client of either system, with the handful of calls the workloads
//! make. etcd is driven through its Lease and Lock services exactly as the
//! `etcd-client` crate does (one connection balanced over all members, a
//! keep-alive stream per client); raftlock through its client library
//! (`raftlock_client::Client`, the low-level acquire/release with a lease per
//! client, and a keep-alive stream per client).

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic::Streaming;

use crate::cluster::{etcd, System};
use crate::etcd_rpc::etcdserverpb::kv_client::KvClient;
use crate::etcd_rpc::etcdserverpb::lease_client::LeaseClient;
use crate::etcd_rpc::etcdserverpb::{
    LeaseGrantRequest, LeaseKeepAliveRequest, LeaseKeepAliveResponse, LeaseRevokeRequest,
    RangeRequest,
};
use crate::etcd_rpc::v3lockpb::lock_client::LockClient;
use crate::etcd_rpc::v3lockpb::{LockRequest, UnlockRequest};
use crate::Error;

/// A lease id of either system (etcd's are positive `i64`s).
pub type LeaseId = u64;

/// What unlocking needs: etcd's lock key, or raftlock's lock name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    Etcd(Vec<u8>),
    Raftlock(String),
}

/// A client of one system.
#[derive(Debug)]
pub enum Driver {
    Etcd(Box<EtcdDriver>),
    Raftlock(Box<RaftlockDriver>),
}

/// An etcd client: one channel balanced over every member.
#[derive(Debug)]
pub struct EtcdDriver {
    lease: LeaseClient<Channel>,
    lock: LockClient<Channel>,
    kv: KvClient<Channel>,
    /// The keep-alive stream, opened by the first keep-alive.
    keep_alive: Option<KeepAliveStream>,
}

#[derive(Debug)]
struct KeepAliveStream {
    requests: mpsc::Sender<LeaseKeepAliveRequest>,
    responses: Streaming<LeaseKeepAliveResponse>,
}

/// A raftlock client with its owner token (one per client, as a task
/// would have).
#[derive(Debug)]
pub struct RaftlockDriver {
    client: raftlock_client::Client,
    owner: String,
    /// Open keep-alive stream, as etcd's driver keeps one.
    keep_alive: Option<raftlock_client::KeepAliveStream>,
}

impl Driver {
    /// A new client of `system`, with its own connections.
    pub async fn connect(system: System, endpoints: &[String]) -> Result<Driver, Error> {
        match system {
            System::Etcd => {
                let list = endpoints
                    .iter()
                    .map(|e| etcd::endpoint(e))
                    .collect::<Result<Vec<_>, _>>()?;
                let channel = Channel::balance_list(list.into_iter());
                Ok(Driver::Etcd(Box::new(EtcdDriver {
                    lease: LeaseClient::new(channel.clone()),
                    lock: LockClient::new(channel.clone()),
                    kv: KvClient::new(channel),
                    keep_alive: None,
                })))
            }
            System::Raftlock => Ok(Driver::Raftlock(Box::new(RaftlockDriver {
                client: raftlock_client::Client::connect(endpoints.iter().cloned()).await?,
                owner: uuid::Uuid::new_v4().to_string(),
                keep_alive: None,
            }))),
        }
    }

    /// Grants a lease. etcd counts TTLs in whole seconds: `ttl` is rounded
    /// up (and etcd itself raises anything under its minimum, 2 s with
    /// default timings).
    pub async fn grant(&mut self, ttl: Duration) -> Result<LeaseId, Error> {
        match self {
            Driver::Etcd(d) => {
                let r = d
                    .lease
                    .lease_grant(LeaseGrantRequest {
                        ttl: etcd_ttl_secs(ttl),
                        id: 0,
                    })
                    .await?
                    .into_inner();
                if !r.error.is_empty() {
                    return Err(Error::Etcd(tonic::Status::unknown(r.error)));
                }
                Ok(r.id as LeaseId)
            }
            Driver::Raftlock(d) => Ok(d.client.grant_lease(ttl).await?),
        }
    }

    /// Renews a lease once.
    pub async fn keep_alive(&mut self, lease: LeaseId) -> Result<(), Error> {
        match self {
            Driver::Etcd(d) => d.keep_alive(lease).await,
            Driver::Raftlock(d) => d.keep_alive(lease).await,
        }
    }

    /// Revokes a lease, releasing what it holds.
    pub async fn revoke(&mut self, lease: LeaseId) -> Result<(), Error> {
        match self {
            Driver::Etcd(d) => {
                d.lease
                    .lease_revoke(LeaseRevokeRequest { id: lease as i64 })
                    .await?;
                Ok(())
            }
            Driver::Raftlock(d) => d.client.revoke(lease).await.map(drop).map_err(Into::into),
        }
    }

    /// Locks `name` for `lease`, waiting as long as it takes.
    pub async fn lock(&mut self, name: &str, lease: LeaseId) -> Result<Held, Error> {
        match self {
            Driver::Etcd(d) => {
                let r = d
                    .lock
                    .lock(LockRequest {
                        name: name.as_bytes().to_vec(),
                        lease: lease as i64,
                    })
                    .await?
                    .into_inner();
                Ok(Held::Etcd(r.key))
            }
            Driver::Raftlock(d) => {
                let spec = raftlock_client::Acquire::exclusive(name, d.owner.clone(), lease);
                match d.client.acquire(&spec).await? {
                    Some(_) => Ok(Held::Raftlock(name.to_string())),
                    None => Err(Error::Raftlock(raftlock_client::Error::Internal(
                        "a waiting acquire answered 'busy'".into(),
                    ))),
                }
            }
        }
    }

    /// Unlocks what [`lock`](Self::lock) answered.
    pub async fn unlock(&mut self, held: Held) -> Result<(), Error> {
        match (self, held) {
            (Driver::Etcd(d), Held::Etcd(key)) => {
                d.lock.unlock(UnlockRequest { key }).await?;
                Ok(())
            }
            (Driver::Raftlock(d), Held::Raftlock(name)) => {
                d.client.release(&name, &d.owner).await?;
                Ok(())
            }
            (_, held) => panic!("unlock of {held:?} on a client of the other system"),
        }
    }

    /// Whether any lock whose name starts with `prefix` is still held:
    /// etcd answers the count of lock keys; raftlock at most 1.
    pub async fn locks_left(&mut self, prefix: &str) -> Result<u64, Error> {
        match self {
            Driver::Etcd(d) => {
                let key = prefix.as_bytes().to_vec();
                let r =
                    d.kv.range(RangeRequest {
                        range_end: prefix_end(&key),
                        key,
                        count_only: true,
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                Ok(r.count.max(0) as u64)
            }
            Driver::Raftlock(d) => Ok(d.client.list(prefix, 1).await?.len() as u64),
        }
    }
}

impl RaftlockDriver {
    /// Renews over the client's keep-alive stream, reopened after it ends.
    async fn keep_alive(&mut self, lease: LeaseId) -> Result<(), Error> {
        let stream = match &mut self.keep_alive {
            Some(s) => s,
            None => self
                .keep_alive
                .insert(self.client.keep_alive_stream().await?),
        };
        match stream.keep_alive(lease).await {
            Ok(_) => Ok(()),
            Err(e @ raftlock_client::Error::LeaseExpired(_)) => Err(e.into()),
            Err(e) => {
                self.keep_alive = None;
                Err(e.into())
            }
        }
    }
}

impl EtcdDriver {
    async fn keep_alive(&mut self, lease: LeaseId) -> Result<(), Error> {
        let request = LeaseKeepAliveRequest { id: lease as i64 };
        let stream = match &mut self.keep_alive {
            Some(s) => {
                s.requests
                    .send(request)
                    .await
                    .map_err(|_| tonic::Status::unavailable("keep-alive stream closed"))?;
                s
            }
            None => {
                // Like etcd-client: the first request goes in before the call,
                // since the server answers headers with the first response.
                let (requests, rx) = mpsc::channel(16);
                requests
                    .send(request)
                    .await
                    .map_err(|_| tonic::Status::unavailable("keep-alive stream closed"))?;
                let responses = self
                    .lease
                    .lease_keep_alive(ReceiverStream::new(rx))
                    .await?
                    .into_inner();
                self.keep_alive.insert(KeepAliveStream {
                    requests,
                    responses,
                })
            }
        };
        match stream.responses.message().await {
            Ok(Some(r)) if r.ttl > 0 => Ok(()),
            Ok(Some(_)) => Err(Error::Etcd(tonic::Status::not_found("lease not found"))),
            Ok(None) => {
                self.keep_alive = None;
                Err(Error::Etcd(tonic::Status::unavailable(
                    "keep-alive stream ended",
                )))
            }
            Err(status) => {
                self.keep_alive = None;
                Err(Error::Etcd(status))
            }
        }
    }
}

/// etcd's TTL for `ttl`: whole seconds, rounded up, at least 1.
pub fn etcd_ttl_secs(ttl: Duration) -> i64 {
    (ttl.as_millis().div_ceil(1000) as i64).max(1)
}

/// The end of etcd's key range for every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etcd_ttls_round_up_to_seconds() {
        assert_eq!(etcd_ttl_secs(Duration::from_millis(1)), 1);
        assert_eq!(etcd_ttl_secs(Duration::from_millis(2000)), 2);
        assert_eq!(etcd_ttl_secs(Duration::from_millis(2001)), 3);
    }

    #[test]
    fn prefix_end_covers_the_prefix() {
        assert_eq!(prefix_end(b"w7/"), b"w70".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }
}
