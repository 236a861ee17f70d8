//! The serving layer's exposition: names, types, help texts and units, and
//! counters that move with the events they count, encoded with the
//! replication metrics into one text.

use std::time::Duration;

use raftlock_raft::NodeMetrics;
use raftlock_storage::{EndReason, Event};

use super::*;

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

/// The end of `o`'s hold on `a` (fence 3).
fn hold_ended(reason: EndReason) -> Event {
    Event::HoldEnded {
        name: "a".into(),
        owner: "o".into(),
        fence: 3,
        reason,
    }
}

#[test]
fn every_metric_has_its_name_type_help_and_unit_in_the_one_text() {
    let m = LockMetrics::new();
    m.set_gauges(LockGauges {
        expiry_backlog: Some(0),
        ..LockGauges::default()
    });
    m.on_event(&hold_ended(EndReason::Released));
    m.on_event(&Event::LeaseEnded {
        id: 7,
        reason: EndReason::LeaseRevoked,
    });
    let text = NodeMetrics::new().encode_with(m.registry());
    let expected = [
        ("raftlock_lock_held", "gauge"),
        ("raftlock_lock_holders", "gauge"),
        ("raftlock_lock_waiters", "gauge"),
        ("raftlock_lock_grants", "counter"),
        ("raftlock_lock_releases", "counter"),
        ("raftlock_lock_wait_seconds", "histogram"),
        ("raftlock_lock_hold_seconds", "histogram"),
        ("raftlock_lock_delays", "counter"),
        ("raftlock_lease_live", "gauge"),
        ("raftlock_lease_grants", "counter"),
        ("raftlock_lease_ends", "counter"),
        ("raftlock_lease_keepalives", "counter"),
        ("raftlock_lease_expiry_backlog", "gauge"),
    ];
    for (name, kind) in expected {
        assert_eq!(type_of(&text, name), Some(kind), "{name} in:\n{text}");
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "{name} has no help text"
        );
        if name.ends_with("_seconds") {
            assert!(text.contains(&format!("# UNIT {name} seconds")), "{name}");
        }
    }
    // Replication's families come first, in the same text, which ends once.
    assert!(type_of(&text, "raftlock_raft_term").is_some());
    assert_eq!(text.matches("# EOF").count(), 1);
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn counters_follow_events() {
    let m = LockMetrics::new();
    m.on_event(&Event::Granted {
        name: "a".into(),
        owner: "o".into(),
        lease: 7,
        fence: 3,
    });
    m.on_event(&hold_ended(EndReason::LeaseExpired));
    m.on_event(&Event::LeaseGranted {
        id: 7,
        ttl_ms: 1000,
    });
    m.on_event(&Event::LeaseEnded {
        id: 7,
        reason: EndReason::LeaseExpired,
    });
    m.on_keep_alive();
    m.on_granted_after(Duration::from_millis(5));
    let text = NodeMetrics::new().encode_with(m.registry());
    assert_eq!(sample(&text, "raftlock_lock_grants_total"), Some(1.0));
    assert_eq!(
        sample(
            &text,
            "raftlock_lock_releases_total{reason=\"lease_expired\"}"
        ),
        Some(1.0)
    );
    assert_eq!(sample(&text, "raftlock_lock_hold_seconds_count"), Some(1.0));
    assert_eq!(sample(&text, "raftlock_lock_wait_seconds_count"), Some(1.0));
    assert_eq!(sample(&text, "raftlock_lease_grants_total"), Some(1.0));
    assert_eq!(
        sample(&text, "raftlock_lease_ends_total{reason=\"expired\"}"),
        Some(1.0)
    );
    assert_eq!(sample(&text, "raftlock_lease_keepalives_total"), Some(1.0));
}
