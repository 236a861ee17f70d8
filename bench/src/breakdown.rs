//! Where a raftlock write's time goes: the nodes' own timings of each
//! stage, read from their `/metrics` before and after a W1–W3 run.
//!
//! Every stage is a histogram the nodes keep anyway (`_sum` and `_count`),
//! so the mean of a stage over a run is the difference of two scrapes. The
//! stages nest: a client's call contains the leader's serving of it, which
//! contains the proposal (replication, syncs, commit, apply), which waits
//! for the leader's own sync and the faster follower's round trip, which
//! contains that follower's serving of it, which contains its sync.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The stages, in nesting order: (key in a run's values, label).
pub const STAGES: &[(&str, &str)] = &[
    (
        "stage_client_ms",
        "client: one call (lock or unlock), end to end",
    ),
    ("stage_served_ms", "leader: serving the call (gRPC handler)"),
    (
        "stage_proposal_ms",
        "leader: entry proposed → applied (replication, syncs, commit, apply)",
    ),
    (
        "stage_leader_sync_ms",
        "leader: its own log append and sync",
    ),
    (
        "stage_rtt_fast_ms",
        "leader → faster follower: AppendEntries round trip",
    ),
    (
        "stage_rtt_slow_ms",
        "leader → slower follower: AppendEntries round trip",
    ),
    (
        "stage_follower_served_ms",
        "follower: serving AppendEntries (checks, append, sync)",
    ),
    (
        "stage_follower_sync_ms",
        "follower: its log append and sync",
    ),
    ("stage_writes_per_entry", "client writes per entry"),
];

/// The admin listener of the raftlock node whose client address is
/// `client_addr`: the port two above it (the node's own default).
pub fn admin_addr(client_addr: &str) -> Option<String> {
    let (host, port) = client_addr.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    Some(format!("{host}:{}", port.checked_add(2)?))
}

/// The `/metrics` text of every node, in node order; `None` if a node
/// does not answer (the run then has no breakdown).
pub async fn scrape_all(admin_addrs: &[String]) -> Option<Vec<String>> {
    let mut texts = Vec::new();
    for addr in admin_addrs {
        let text = tokio::time::timeout(Duration::from_secs(2), scrape(addr))
            .await
            .ok()
            .flatten()?;
        texts.push(text);
    }
    Some(texts)
}

async fn scrape(addr: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.ok()?;
    let raw = String::from_utf8(raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// Sum of every sample of `name` (any labels) whose labels contain
/// `label` (empty: all), in one node's `/metrics` text.
pub fn total(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = rest.rsplit_once(' ')?;
            let matches = (labels.is_empty() || labels.starts_with('{')) && labels.contains(label);
            matches.then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// Mean of histogram `name` (seconds) in ms between two scrapes, over the
/// series whose labels contain `label`; `None` if nothing was observed.
fn mean_ms(before: &str, after: &str, name: &str, label: &str) -> Option<f64> {
    let delta = |suffix: &str| {
        let series = format!("{name}_{suffix}");
        total(after, &series, label) - total(before, &series, label)
    };
    let count = delta("count");
    (count > 0.0).then(|| delta("sum") / count * 1000.0)
}

/// The mean of each stage between the scrapes `before` and `after` (node
/// order), with node `leader` (0-based) leading throughout. The client
/// stage is left to the caller, who timed the calls.
pub fn stages(before: &[String], after: &[String], leader: usize) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    let (lb, la) = (&before[leader], &after[leader]);
    let calls = [
        "rpc=\"raftlock.v1.Lock/Acquire\"",
        "rpc=\"raftlock.v1.Lock/Release\"",
    ];
    let served = calls.iter().filter_map(|rpc| {
        let series = "raftlock_grpc_request_duration_seconds";
        let count =
            total(la, &format!("{series}_count"), rpc) - total(lb, &format!("{series}_count"), rpc);
        let sum =
            total(la, &format!("{series}_sum"), rpc) - total(lb, &format!("{series}_sum"), rpc);
        (count > 0.0).then_some((sum, count))
    });
    let (sum, count) = served.fold((0.0, 0.0), |(s, c), (s1, c1)| (s + s1, c + c1));
    if count > 0.0 {
        out.push(("stage_served_ms", sum / count * 1000.0));
    }
    let mut push = |key, value: Option<f64>| {
        if let Some(v) = value {
            out.push((key, v));
        }
    };
    push(
        "stage_proposal_ms",
        mean_ms(lb, la, "raftlock_raft_proposal_seconds", ""),
    );
    push(
        "stage_leader_sync_ms",
        mean_ms(lb, la, "raftlock_raft_log_append_seconds", ""),
    );
    let followers: Vec<usize> = (0..before.len()).filter(|&i| i != leader).collect();
    let mut rtts: Vec<f64> = followers
        .iter()
        .filter_map(|i| {
            let peer = format!("peer=\"{}\"", i + 1);
            mean_ms(lb, la, "raftlock_peer_append_seconds", &peer)
        })
        .collect();
    rtts.sort_by(f64::total_cmp);
    push("stage_rtt_fast_ms", rtts.first().copied());
    push("stage_rtt_slow_ms", rtts.get(1).copied());
    let pooled = |name: &str| {
        let (mut sum, mut count) = (0.0, 0.0);
        for &i in &followers {
            for (suffix, into) in [("sum", &mut sum), ("count", &mut count)] {
                let series = format!("{name}_{suffix}");
                *into += total(&after[i], &series, "") - total(&before[i], &series, "");
            }
        }
        (count > 0.0).then(|| sum / count * 1000.0)
    };
    push(
        "stage_follower_served_ms",
        pooled("raftlock_peer_append_served_seconds"),
    );
    push(
        "stage_follower_sync_ms",
        pooled("raftlock_raft_log_append_seconds"),
    );
    let writes = total(la, "raftlock_raft_proposals_total", "")
        - total(lb, "raftlock_raft_proposals_total", "");
    let entries = total(la, "raftlock_raft_proposed_entries_total", "")
        - total(lb, "raftlock_raft_proposed_entries_total", "");
    push(
        "stage_writes_per_entry",
        (entries > 0.0).then(|| writes / entries),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(proposal: (f64, f64), append: (f64, f64), peers: &[(u64, f64, f64)]) -> String {
        let mut t = String::from("# TYPE raftlock_raft_proposal_seconds histogram\n");
        t += &format!("raftlock_raft_proposal_seconds_sum {}\n", proposal.0);
        t += &format!("raftlock_raft_proposal_seconds_count {}\n", proposal.1);
        t += "raftlock_raft_proposal_seconds_bucket{le=\"0.0001\"} 0\n";
        t += &format!("raftlock_raft_log_append_seconds_sum {}\n", append.0);
        t += &format!("raftlock_raft_log_append_seconds_count {}\n", append.1);
        t += "raftlock_raft_log_append_entries_sum 99\n";
        t += "raftlock_raft_log_append_entries_count 99\n";
        for (peer, sum, count) in peers {
            t += &format!("raftlock_peer_append_seconds_sum{{peer=\"{peer}\"}} {sum}\n");
            t += &format!("raftlock_peer_append_seconds_count{{peer=\"{peer}\"}} {count}\n");
        }
        t
    }

    fn get(stages: &[(&str, f64)], key: &str) -> f64 {
        stages
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .unwrap()
    }

    #[test]
    fn stage_means_are_differences_of_two_scrapes() {
        // Node 2 (index 1) leads; 100 proposals took 0.1 s more after the
        // run than before; peer 3 answered slower than peer 1.
        let before = vec![
            node((0.0, 0.0), (1.0, 10.0), &[]),
            node((5.0, 50.0), (2.0, 20.0), &[(1, 1.0, 10.0), (3, 1.0, 10.0)]),
            node((0.0, 0.0), (0.0, 0.0), &[]),
        ];
        let after = vec![
            node((0.0, 0.0), (1.05, 110.0), &[]),
            node(
                (5.1, 150.0),
                (2.03, 120.0),
                &[(1, 1.04, 110.0), (3, 1.06, 110.0)],
            ),
            node((0.0, 0.0), (0.07, 100.0), &[]),
        ];
        let s = stages(&before, &after, 1);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(get(&s, "stage_proposal_ms"), 1.0), "{s:?}");
        assert!(close(get(&s, "stage_leader_sync_ms"), 0.3), "{s:?}");
        assert!(close(get(&s, "stage_rtt_fast_ms"), 0.4), "{s:?}");
        assert!(close(get(&s, "stage_rtt_slow_ms"), 0.6), "{s:?}");
        // Followers pooled: (0.05 + 0.07) s over 200 appends.
        assert!(close(get(&s, "stage_follower_sync_ms"), 0.6), "{s:?}");
        // Nothing served or proposed in the scrapes: no such stage.
        assert!(!s.iter().any(|(k, _)| *k == "stage_served_ms"), "{s:?}");
    }

    #[test]
    fn a_series_name_is_not_the_prefix_of_another() {
        let text = "raftlock_raft_log_append_seconds_sum 2\n\
                    raftlock_raft_log_append_seconds_sum_extra 40\n\
                    raftlock_peer_append_seconds_sum{peer=\"1\"} 3\n\
                    raftlock_peer_append_seconds_sum{peer=\"2\"} 4\n";
        assert_eq!(total(text, "raftlock_raft_log_append_seconds_sum", ""), 2.0);
        assert_eq!(total(text, "raftlock_peer_append_seconds_sum", ""), 7.0);
        assert_eq!(
            total(text, "raftlock_peer_append_seconds_sum", "peer=\"2\""),
            4.0
        );
    }

    #[test]
    fn the_admin_port_is_two_above_the_client_port() {
        assert_eq!(
            admin_addr("127.0.0.1:24111").as_deref(),
            Some("127.0.0.1:24113")
        );
        assert_eq!(admin_addr("nonsense"), None);
        assert_eq!(admin_addr("127.0.0.1:65535"), None);
    }
}
