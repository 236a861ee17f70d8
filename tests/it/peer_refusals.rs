//! Refused peer traffic stays visible: a flood of forged messages from
//! made-up senders writes a bounded number of log lines, cannot keep a
//! later refusal of another kind out of the log, and every refusal is
//! counted by reason on /metrics.

use std::io::Write;
use std::sync::{Arc, Mutex};

use openraft::raft::VoteRequest;
use raftlock_raft::pb::Blob;
use raftlock_raft::peer::payload::encode;
use raftlock_storage::{TypeConfig, Vote};
use tonic::Code;

use crate::cluster::TestCluster;
use crate::peer_attacks::{forged, peer_client, signed, term_of};

/// Where this test's process logs go (each test runs in a process of its
/// own under nextest, so the global subscriber is this test's).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Installs the capture as the process's subscriber (before the
    /// cluster's own, which then stays out).
    fn install() -> Captured {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .try_init()
            .expect("this test's process has no subscriber yet (run it under nextest)");
        captured
    }

    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The value of the sample `name` in a metrics text.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
}

/// 1 100 untagged Votes, each from a sender id of its own, then one Vote
/// tagged with the cluster's secret but for another cluster (what a node
/// started on a data dir copied from another cluster sends). The flood is
/// refused and logged a bounded number of times; the foreign-cluster
/// refusal is logged; /metrics counts both reasons. Without the fix the
/// flood's 1 024 senders fill the map of logged senders, the foreign
/// refusal is never logged (until a restart), and no metric counts either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_made_up_senders_cannot_hide_a_later_refusal() {
    let logs = Captured::install();
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let target = cluster.others(leader)[0];
    let rpc =
        VoteRequest::<TypeConfig>::new(Vote::new(term_of(&cluster, leader) + 1, leader), None);
    let data = encode(&rpc).expect("encode a vote");

    let mut peer = peer_client(&cluster, target).await;
    let started = std::time::Instant::now();
    const FLOOD: u64 = 1_100;
    for from in 1_000..1_000 + FLOOD {
        let untagged = Blob {
            mac: Vec::new(),
            ..forged(&cluster, "vote", from, target, data.clone())
        };
        let refused = peer.vote(untagged).await.expect_err("an untagged vote");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    }

    let mut foreign = forged(&cluster, "vote", leader, target, data);
    foreign.cluster_id = uuid::Uuid::new_v4().to_string();
    let refused = peer
        .vote(signed(&cluster, "vote", foreign))
        .await
        .expect_err("a vote for another cluster");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    let lines = logs.lines();
    let refusals: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("refused a peer message"))
        .collect();
    assert!(
        refusals.iter().any(|l| l.contains("message for cluster")),
        "the foreign-cluster refusal was not logged: {refusals:#?}"
    );
    // At most 5 lines per 10 s window: however slow the machine, the
    // flood's lines are bounded by the windows it spanned, far below 1 100.
    let windows = started.elapsed().as_secs() / 10 + 2;
    let flood_lines = refusals.iter().filter(|l| l.contains("no tag")).count() as u64;
    assert!(
        (1..=5 * windows).contains(&flood_lines),
        "{flood_lines} lines for the flood over {windows} windows"
    );

    let metrics = cluster.node(target).metrics_text();
    let auth = sample(&metrics, "raftlock_peer_refused_total{reason=\"auth\"}");
    assert_eq!(auth, Some(FLOOD as f64), "{metrics}");
    let foreign = sample(&metrics, "raftlock_peer_refused_total{reason=\"cluster\"}");
    assert_eq!(foreign, Some(1.0), "{metrics}");
    cluster.shutdown().await;
}
