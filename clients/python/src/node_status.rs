//! An embedded node's view of its cluster, as `Node.status()` answers it.

use pyo3::prelude::*;

use crate::convert::repr_of;

/// One member of the cluster.
#[pyclass(module = "raftlock._native", frozen)]
#[derive(Clone)]
pub struct Member {
    #[pyo3(get)]
    pub id: u64,
    #[pyo3(get)]
    pub peer_addr: String,
    #[pyo3(get)]
    pub client_addr: String,
    /// A voter (`False`: a learner, catching up before promotion).
    #[pyo3(get)]
    pub voter: bool,
}

#[pymethods]
impl Member {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "Member",
            id = self.id,
            peer_addr = &self.peer_addr,
            client_addr = &self.client_addr,
            voter = self.voter,
        )
    }
}

/// What one node knows of the cluster, without asking the others.
#[pyclass(module = "raftlock._native", frozen)]
pub struct NodeStatus {
    #[pyo3(get)]
    pub id: u64,
    /// "leader", "follower", "candidate", "learner" or "shutdown".
    #[pyo3(get)]
    pub role: &'static str,
    #[pyo3(get)]
    pub term: u64,
    /// The leader's id, if this node knows one.
    #[pyo3(get)]
    pub leader: Option<u64>,
    #[pyo3(get)]
    pub last_log_index: u64,
    #[pyo3(get)]
    pub applied_index: u64,
    #[pyo3(get)]
    pub snapshot_index: u64,
    #[pyo3(get)]
    pub members: Vec<Member>,
}

#[pymethods]
impl NodeStatus {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "NodeStatus",
            id = self.id,
            role = self.role,
            term = self.term,
            leader = self.leader,
            last_log_index = self.last_log_index,
            applied_index = self.applied_index,
            snapshot_index = self.snapshot_index,
            members = self.members.clone(),
        )
    }
}

impl From<raftlock::node::NodeStatus> for NodeStatus {
    fn from(s: raftlock::node::NodeStatus) -> Self {
        NodeStatus {
            id: s.id,
            role: s.role,
            term: s.term,
            leader: s.leader,
            last_log_index: s.last_log_index,
            applied_index: s.applied_index,
            snapshot_index: s.snapshot_index,
            members: s
                .members
                .into_iter()
                .map(|(id, (addr, voter))| Member {
                    id,
                    peer_addr: addr.peer_addr,
                    client_addr: addr.client_addr,
                    voter,
                })
                .collect(),
        }
    }
}
