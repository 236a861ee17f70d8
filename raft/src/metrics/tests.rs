//! The exposition: names, types, help texts and units, and counters that
//! move with the events they count.

use std::time::Duration;

use super::NodeMetrics;

/// The `# TYPE` line of `name` in `text`, if any.
fn type_of<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("# TYPE {name} ");
    text.lines().find_map(|l| l.strip_prefix(prefix.as_str()))
}

/// The value of the sample line that starts with `series` (name and labels).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

#[test]
fn every_metric_has_its_name_type_help_and_unit() {
    let m = NodeMetrics::new();
    // A family is listed once it has a member; the leader-only ones have
    // one only on the leader.
    m.on_request("raftlock.v1.Lock/Acquire", "Ok", Duration::from_millis(3));
    m.on_peer_error(2, "vote");
    m.peer_refusals().inc("auth");
    m.on_peer_append(2, Duration::from_millis(1));
    let _client = m.listener("client");
    m.commit_index.get_or_create(&Vec::new()).set(1);
    m.peer_lag
        .get_or_create(&vec![("peer", "2".to_string())])
        .set(0);
    let text = m.encode();
    let expected = [
        ("raftlock_raft_term", "gauge"),
        ("raftlock_raft_is_leader", "gauge"),
        ("raftlock_raft_leader_id", "gauge"),
        ("raftlock_raft_last_log_index", "gauge"),
        ("raftlock_raft_commit_index", "gauge"),
        ("raftlock_raft_applied_index", "gauge"),
        ("raftlock_raft_snapshot_index", "gauge"),
        ("raftlock_raft_log_entries", "gauge"),
        ("raftlock_raft_voters", "gauge"),
        ("raftlock_raft_learners", "gauge"),
        ("raftlock_raft_elections", "counter"),
        ("raftlock_raft_leader_changes", "counter"),
        ("raftlock_raft_snapshots_built", "counter"),
        ("raftlock_raft_snapshots_installed", "counter"),
        ("raftlock_raft_snapshot_size_bytes", "gauge"),
        ("raftlock_raft_proposals", "counter"),
        ("raftlock_raft_proposed_entries", "counter"),
        ("raftlock_raft_writes_per_entry", "histogram"),
        ("raftlock_raft_log_append_seconds", "histogram"),
        ("raftlock_raft_log_append_entries", "histogram"),
        ("raftlock_raft_proposal_seconds", "histogram"),
        ("raftlock_grpc_requests", "counter"),
        ("raftlock_grpc_request_duration_seconds", "histogram"),
        ("raftlock_peer_replication_lag_entries", "gauge"),
        ("raftlock_peer_rpc_errors", "counter"),
        ("raftlock_peer_refused", "counter"),
        ("raftlock_peer_append_seconds", "histogram"),
        ("raftlock_peer_append_served_seconds", "histogram"),
        ("raftlock_connections_open", "gauge"),
        ("raftlock_connections_refused", "counter"),
        ("raftlock_connections_timed_out", "counter"),
    ];
    for (name, kind) in expected {
        assert_eq!(type_of(&text, name), Some(kind), "{name} in:\n{text}");
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "{name} has no help text"
        );
        for unit in ["seconds", "bytes"] {
            if name.ends_with(&format!("_{unit}")) {
                assert!(text.contains(&format!("# UNIT {name} {unit}")), "{name}");
            }
        }
    }
    let families = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
    assert_eq!(
        families,
        expected.len(),
        "a metric is missing from the list"
    );
    assert!(text
        .lines()
        .all(|l| l.starts_with('#') || l.starts_with("raftlock_")));
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn counters_follow_events() {
    let m = NodeMetrics::new();
    m.on_proposed(3);
    m.on_request("raftlock.v1.Lock/Acquire", "Ok", Duration::from_millis(2));
    m.on_request("raftlock.v1.Lock/Acquire", "Ok", Duration::from_millis(2));
    let text = m.encode();
    assert_eq!(sample(&text, "raftlock_raft_proposals_total"), Some(3.0));
    assert_eq!(
        sample(&text, "raftlock_raft_proposed_entries_total"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "raftlock_grpc_requests_total{rpc=\"raftlock.v1.Lock/Acquire\",code=\"Ok\"}"
        ),
        Some(2.0)
    );
}
