//! What a node checks of its data dir against the cluster before its Raft
//! starts: that no other process already runs as this node, and that the
//! dir is not older than what the other members saw of it.

use std::time::Duration;

use raftlock_storage::NodeId;

use super::StartError;
use crate::config::Config;
use crate::node::rollback;
use crate::peer::network::PeerNetwork;
use crate::peer::probe::{probe, PeerProbe};

/// Refuses to start on a data dir that is a copy of a running node's or
/// older than what the other members saw of this node. A dir that records
/// no membership listing this node (new, or joining) has nothing to
/// compare.
pub(crate) async fn refuse_unsafe_start(
    config: &Config,
    log: &raftlock_storage::LogStore,
    sm_store: &raftlock_storage::StateMachineStore,
    net: &PeerNetwork,
) -> Result<(), StartError> {
    let Some(membership) = recorded_membership(log, sm_store) else {
        return Ok(());
    };
    let Some(recorded) = membership.get_node(&config.id) else {
        return Ok(());
    };
    refuse_if_running_elsewhere(config, net, &recorded.peer_addr).await?;
    refuse_if_rolled_back(config, log, net, &membership).await
}

/// Refuses to start when another process already answers as this node at
/// `recorded`, the peer address the membership records for it: this data
/// dir is then a copy of a running node's, and two processes with one id
/// would each vote and acknowledge entries as that node.
async fn refuse_if_running_elsewhere(
    config: &Config,
    net: &PeerNetwork,
    recorded: &str,
) -> Result<(), StartError> {
    let own = config.node_addr().peer_addr;
    if recorded == own {
        // Then this process binds that address, or fails to.
        return Ok(());
    }
    match probe(net, config.id, recorded, Duration::from_secs(1)).await {
        PeerProbe::Node {
            id,
            boot,
            cluster_id,
            ..
        } if id == config.id => Err(StartError::AlreadyRunning {
            id,
            at: recorded.to_owned(),
            cluster_id,
            boot,
            own,
            data_dir: config.data_dir.clone(),
        }),
        _ => Ok(()),
    }
}

/// The newest membership the data dir records: in its log, else in its
/// applied state.
fn recorded_membership(
    log: &raftlock_storage::LogStore,
    sm_store: &raftlock_storage::StateMachineStore,
) -> Option<raftlock_storage::Membership> {
    match log.last_membership() {
        Ok(Some(membership)) => Some(membership),
        _ => sm_store
            .applied()
            .ok()
            .map(|(_, stored)| stored.membership().clone()),
    }
}

/// Refuses to start on a data dir older than what the other members of
/// `membership` saw of this node (crate::node::rollback).
async fn refuse_if_rolled_back(
    config: &Config,
    log: &raftlock_storage::LogStore,
    net: &PeerNetwork,
    membership: &raftlock_storage::Membership,
) -> Result<(), StartError> {
    let peers: Vec<(NodeId, String)> = membership
        .nodes()
        .filter(|(id, _)| **id != config.id)
        .map(|(id, addr)| (*id, addr.peer_addr.clone()))
        .collect();
    if peers.is_empty() {
        return Ok(());
    }
    let own = log.position().map_err(|e| StartError::Open {
        dir: config.data_dir.clone(),
        source: e,
    })?;
    rollback::check_peers(net, config.id, &own, peers, &config.data_dir)
        .await
        .map_err(StartError::from)
}
