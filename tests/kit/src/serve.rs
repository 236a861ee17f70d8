//! One `raftlock serve` node as a process: its flags, its environment
//! (every `RAFTLOCK_*` variable of the caller removed, so the flags alone
//! configure it; the join token passed in the environment, not on the
//! command line), and the `--initial-cluster` list of a new cluster.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::process::{NodeProcess, NodeSpec};

/// How one raftlock node is started.
#[derive(Debug, Clone)]
pub struct ServeFlags {
    /// The node id, 1-based.
    pub id: u64,
    pub data_dir: PathBuf,
    /// Its own listeners.
    pub client_addr: String,
    pub peer_addr: String,
    /// What it tells the cluster instead (`--advertise-*-addr`: a proxy in
    /// front of it); `None`: its own listeners.
    pub advertise: Option<(String, String)>,
    /// `--initial-cluster`, see [`initial_cluster`].
    pub initial_cluster: String,
    /// The peers' shared secret (`RAFTLOCK_JOIN_TOKEN`); `None` with TLS.
    pub join_token: Option<String>,
    /// `--heartbeat-ms` and `--election-timeout-ms`; `None`: the defaults.
    pub timing: Option<(u64, u64)>,
    /// `--snapshot-after`; `None`: the default.
    pub snapshot_after: Option<u64>,
    /// `--admin-addr`: `off` unless asked for, since its default port
    /// (client port + 2) may be another node's.
    pub admin_addr: String,
    /// The log filter (`RAFTLOCK_LOG`); `None`: the caller's, if set.
    pub log_filter: Option<String>,
    /// Further flags, after the kit's own (a flag may be given once).
    pub extra: Vec<String>,
}

impl ServeFlags {
    /// A member of a new cluster `initial_cluster`, with the defaults of
    /// `raftlock serve` and no admin listener.
    pub fn new(
        id: u64,
        data_dir: PathBuf,
        client_addr: String,
        peer_addr: String,
        initial_cluster: String,
    ) -> ServeFlags {
        ServeFlags {
            id,
            data_dir,
            client_addr,
            peer_addr,
            advertise: None,
            initial_cluster,
            join_token: None,
            timing: None,
            snapshot_after: None,
            admin_addr: "off".into(),
            log_filter: None,
            extra: Vec::new(),
        }
    }

    /// The argv after the program: `serve` and its flags.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["serve".into(), "--id".into(), self.id.to_string().into()];
        args.extend(["--data-dir".into(), self.data_dir.clone().into_os_string()]);
        let mut flag = |name: &str, value: String| {
            args.push(name.into());
            args.push(value.into());
        };
        flag("--client-addr", self.client_addr.clone());
        flag("--peer-addr", self.peer_addr.clone());
        if let Some((client, peer)) = &self.advertise {
            flag("--advertise-client-addr", client.clone());
            flag("--advertise-peer-addr", peer.clone());
        }
        flag("--initial-cluster", self.initial_cluster.clone());
        if let Some((heartbeat, election)) = self.timing {
            flag("--heartbeat-ms", heartbeat.to_string());
            flag("--election-timeout-ms", election.to_string());
        }
        if let Some(entries) = self.snapshot_after {
            flag("--snapshot-after", entries.to_string());
        }
        flag("--admin-addr", self.admin_addr.clone());
        args.extend(self.extra.iter().map(OsString::from));
        args
    }

    /// The variables set for the node.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let mut env = Vec::new();
        if let Some(token) = &self.join_token {
            env.push(("RAFTLOCK_JOIN_TOKEN".into(), token.into()));
        }
        if let Some(filter) = &self.log_filter {
            env.push(("RAFTLOCK_LOG".into(), filter.into()));
        }
        env
    }

    /// The node as a process of `program` (a `raftlock` binary, or one
    /// that runs the same node code under `serve`), logging to `log`; not
    /// started yet. Of the caller's `RAFTLOCK_*` variables only
    /// `RAFTLOCK_LOG` reaches it.
    pub fn process(&self, program: &Path, log: PathBuf) -> NodeProcess {
        let spec = NodeSpec {
            index: usize::try_from(self.id).unwrap_or(usize::MAX),
            client_addr: self.client_addr.clone(),
            peer_addr: self.peer_addr.clone(),
            program: program.to_path_buf(),
            args: self.args(),
            env: self.env(),
            log,
        };
        NodeProcess::new(spec, &["RAFTLOCK_"], &["RAFTLOCK_LOG"])
    }
}

/// The `--initial-cluster` value: `id=peer/client` per member, comma
/// separated.
pub fn initial_cluster<'a>(members: impl IntoIterator<Item = (u64, &'a str, &'a str)>) -> String {
    members
        .into_iter()
        .map(|(id, peer, client)| format!("{id}={peer}/{client}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_every_setting_and_extras_come_last() {
        let members = initial_cluster([(1, "p1", "c1"), (2, "p2", "c2")]);
        assert_eq!(members, "1=p1/c1,2=p2/c2");
        let mut flags = ServeFlags::new(2, "/d".into(), "c2".into(), "p2".into(), members);
        flags.timing = Some((50, 300));
        flags.extra = vec!["--quota-leases".into(), "9".into()];
        flags.join_token = Some("t".into());
        let args: Vec<String> = flags
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "serve --id 2 --data-dir /d --client-addr c2 --peer-addr p2 \
             --initial-cluster 1=p1/c1,2=p2/c2 --heartbeat-ms 50 --election-timeout-ms 300 \
             --admin-addr off --quota-leases 9"
        );
        assert_eq!(
            flags.env(),
            vec![("RAFTLOCK_JOIN_TOKEN".into(), "t".into())]
        );
    }
}
