//! The lock-out, replayed at the real defaults: ten source
//! addresses each open client ids up to their quota, every one pinned by a
//! day-long lease. An honest client at another address is still served,
//! the flooded host can still revoke its own leases, and the documented
//! recovery commands (`raftlock locks force-release`, `raftlock lease
//! revoke --source`) succeed as typed.

use std::time::Duration;

use futures::StreamExt;
use raftlock::pb;
use raftlock_client::Acquire;
use raftlock_storage::limits::DEFAULT_QUOTA_CLIENTS;
use tonic::Code;

use super::{force_release, json, node_dir};
use crate::cluster::TestCluster;
use crate::connection_attacks::channel_from;

/// The flooding hosts: 127.0.0.2 to 127.0.0.11.
const SOURCES: std::ops::RangeInclusive<u8> = 2..=11;
/// Grants each source sends past its quota, to see them refused.
const PAST_QUOTA: u32 = 5;
/// Grants in flight per source.
const IN_FLIGHT: usize = 64;
const DAY_MS: u64 = 24 * 3600 * 1000;
/// Times a grant answered UNAVAILABLE is sent again.
const RETRIES: usize = 20;

/// A fresh client id's first request.
fn first_request(client: u128) -> pb::RequestId {
    pb::RequestId {
        client_id: client.to_be_bytes().to_vec(),
        seq: 1,
        acked_below: 1,
        attempt: 0,
    }
}

/// 127.0.0.`host` grants day-long leases from `quota + PAST_QUOTA` fresh
/// client ids; returns the (client id, lease) of each grant and how many
/// were refused by the client quota.
async fn flood_from(host: u8, addr: std::net::SocketAddr) -> (Vec<(u128, u64)>, u32) {
    let leases = pb::lease_client::LeaseClient::new(channel_from(host, addr).await);
    let grants = (0..DEFAULT_QUOTA_CLIENTS + PAST_QUOTA).map(|i| {
        let mut leases = leases.clone();
        let client = (u128::from(host) << 64) | u128::from(i);
        async move {
            let grant = pb::LeaseGrantRequest {
                request_id: Some(first_request(client)),
                ttl_ms: DAY_MS,
            };
            // A starved machine may lose its leader mid-flood: the same
            // request id again is applied once.
            for _ in 0..RETRIES {
                match leases.grant(grant.clone()).await {
                    Err(status) if status.code() == Code::Unavailable => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    reply => return (client, reply),
                }
            }
            (client, leases.grant(grant).await)
        }
    });
    let mut replies = futures::stream::iter(grants).buffer_unordered(IN_FLIGHT);
    let (mut granted, mut refused) = (Vec::new(), 0);
    while let Some((client, reply)) = replies.next().await {
        match reply {
            Ok(reply) => granted.push((client, reply.into_inner().id)),
            Err(status) if status.code() == Code::ResourceExhausted => {
                assert!(status.message().contains("quota_clients"), "{status:?}");
                refused += 1;
            }
            Err(status) => panic!("127.0.0.{host}: {status:?}"),
        }
    }
    (granted, refused)
}

/// Ten sources flood at the default quotas (100 000 client ids, each with
/// a live lease, one of them holding a lock); then a client at 127.0.0.1
/// grants a lease and takes a lock, 127.0.0.2 (at its quota, every client
/// id pinned) revokes its own leases from a fresh client id, and the CLI
/// force-releases the flood's lock and revokes 127.0.0.3's leases.
/// Without the fix the flood fills the table of 100 000 sessions: the
/// honest grant is refused "too many clients", as are the CLI's calls and
/// 127.0.0.2's revoke (its quota), and nobody recovers until the leases
/// expire a day later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_flooding_sources_leave_room_and_an_admin_recovers() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let addr = cluster.addrs[&leader].0;
    let floods: Vec<_> = SOURCES
        .map(|host| tokio::spawn(flood_from(host, addr)))
        .collect();
    let mut flooded = Vec::new();
    for (host, flood) in SOURCES.zip(floods) {
        let (granted, refused) = flood.await.expect("the flood task");
        assert_eq!(
            (granted.len() as u32, refused),
            (DEFAULT_QUOTA_CLIENTS, PAST_QUOTA),
            "127.0.0.{host}"
        );
        flooded.push(granted);
    }
    // One of 127.0.0.3's clients takes a lock on its lease.
    let (client, lease) = flooded[1][0];
    let mut locks = pb::lock_client::LockClient::new(channel_from(3, addr).await);
    let held = locks
        .acquire(pb::AcquireRequest {
            request_id: Some(pb::RequestId {
                seq: 2,
                acked_below: 2,
                ..first_request(client)
            }),
            name: "flooded/held".into(),
            owner: "flooder".into(),
            lease,
            ..Default::default()
        })
        .await
        .expect("the flood takes a lock")
        .into_inner();
    assert!(held.acquired);

    let honest = cluster.client_of(leader).await;
    let lease = honest
        .grant_lease(Duration::from_secs(30))
        .await
        .expect("the honest client is granted a lease");
    let grant = honest
        .acquire(&Acquire {
            wait: false,
            ..Acquire::exclusive("honest/a", "honest", lease)
        })
        .await
        .expect("the honest client acquires");
    assert!(grant.is_some(), "honest/a is free");

    let mut own = pb::lease_client::LeaseClient::new(channel_from(2, addr).await);
    // An operator call: it carries the cluster's admin credential.
    let bearer = cluster
        .admin_options()
        .token
        .expect("the admin credential of a join-token cluster");
    let authorization: tonic::metadata::MetadataValue<_> =
        format!("Bearer {bearer}").parse().expect("header value");
    let (mut seq, mut revoked) = (1, 0);
    loop {
        let mut request = tonic::Request::new(pb::LeaseRevokeAllRequest {
            request_id: Some(pb::RequestId {
                seq,
                acked_below: seq,
                ..first_request(u128::MAX)
            }),
            account: Some(pb::lease_revoke_all_request::Account::Source(
                "127.0.0.2".into(),
            )),
        });
        request
            .metadata_mut()
            .insert("authorization", authorization.clone());
        let reply = own
            .revoke_all(request)
            .await
            .expect("the flooded host revokes its own leases")
            .into_inner();
        revoked += reply.revoked;
        seq += 1;
        if reply.remaining == 0 {
            break;
        }
    }
    assert_eq!(revoked, DEFAULT_QUOTA_CLIENTS);

    let released = force_release(&cluster, "flooded/held").await;
    assert_eq!(released["holders"], 1);
    let node_dir = node_dir(&cluster);
    let done = json(
        &cluster,
        &[
            "lease",
            "revoke",
            "--source",
            "127.0.0.3",
            "--data-dir",
            &node_dir,
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(done["revoked"], DEFAULT_QUOTA_CLIENTS);
    cluster.shutdown().await;
}
