//! What a run does: the counts, durations and rounds of `--smoke` and
//! `--full`, and which workloads it runs.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::System;

/// The two documented ways to run the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Tiny counts; proves every workload still runs (< 2 minutes).
    Smoke,
    /// The counts the targets are stated for.
    Full,
}

/// The workloads of the benchmark issues (W1–W7: issue 14; W8: issue 30).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum WorkloadId {
    W1,
    W2,
    W3,
    W4,
    W5,
    W6,
    W7,
    W8,
}

impl WorkloadId {
    pub const ALL: [WorkloadId; 8] = [
        WorkloadId::W1,
        WorkloadId::W2,
        WorkloadId::W3,
        WorkloadId::W4,
        WorkloadId::W5,
        WorkloadId::W6,
        WorkloadId::W7,
        WorkloadId::W8,
    ];

    /// One line saying what it measures.
    pub fn title(self) -> &'static str {
        match self {
            WorkloadId::W1 => "1 client, 1 lock, uncontended",
            WorkloadId::W2 => "32 clients, 32 different locks",
            WorkloadId::W3 => "32 clients, 1 lock (contended handoff)",
            WorkloadId::W4 => "lease keep-alives: 10k leases, 32 clients",
            WorkloadId::W5 => "handoff after the holder's process is killed",
            WorkloadId::W6 => "next acquire after kill -9 of the leader",
            WorkloadId::W7 => "100k leases each holding a lock: RSS, mass expiry",
            WorkloadId::W8 => "connected clients (2 000) keeping leases alive; a W1 probe",
        }
    }
}

impl fmt::Display for WorkloadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::str::FromStr for WorkloadId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkloadId::ALL
            .into_iter()
            .find(|w| w.to_string().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown workload {s:?} (W1..W8)"))
    }
}

/// Everything a run's size depends on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub mode: Mode,
    /// Workloads to run, in order.
    pub workloads: Vec<WorkloadId>,
    /// Systems to run them on (both, unless narrowed down for profiling).
    pub systems: Vec<System>,
    /// A/B rounds of W1–W6: each round runs both systems once, the order
    /// alternating from round to round.
    pub rounds: usize,
    /// Rounds of W5 and W6 (each system once per round).
    pub fault_rounds: usize,
    /// Load before measuring starts (W1–W4).
    #[serde(with = "secs")]
    pub warmup: Duration,
    /// Measured window (W1–W4).
    #[serde(with = "secs")]
    pub duration: Duration,
    /// Concurrent clients of W2, W3, W4 and of W7's setup.
    pub clients: usize,
    /// Leases kept alive in W4.
    pub w4_leases: usize,
    /// Lease TTLs W5 is run with (etcd's smallest is 2 s).
    #[serde(with = "secs_list")]
    pub w5_ttls: Vec<Duration>,
    /// Leases (each holding one lock) in W7.
    pub w7_leases: usize,
    /// Rounds of W7 (each system once per round).
    pub w7_rounds: usize,
    /// How long W7 waits after the deadline for every lease to expire.
    #[serde(with = "secs")]
    pub w7_expiry_wait: Duration,
    /// Added to W7's planned creation time before the common deadline.
    #[serde(with = "secs")]
    pub w7_slack: Duration,
    /// Connected clients in W8, each with its own connection and lease.
    pub w8_clients: usize,
    /// Rounds of W8 (each system once per round).
    pub w8_rounds: usize,
    /// TTL of W8's client leases; each is renewed every third of it, as
    /// both systems' session keepers do.
    #[serde(with = "secs")]
    pub w8_ttl: Duration,
}

impl Plan {
    /// The plan of a mode.
    pub fn new(mode: Mode) -> Plan {
        match mode {
            Mode::Smoke => Plan {
                mode,
                workloads: WorkloadId::ALL.to_vec(),
                systems: System::ALL.to_vec(),
                rounds: 2,
                fault_rounds: 1,
                warmup: Duration::from_millis(200),
                duration: Duration::from_millis(1000),
                clients: 32,
                w4_leases: 1_000,
                w5_ttls: vec![Duration::from_secs(2)],
                w7_leases: 1_000,
                w7_rounds: 1,
                w7_expiry_wait: Duration::from_secs(30),
                w7_slack: Duration::from_secs(1),
                w8_clients: 50,
                w8_rounds: 1,
                w8_ttl: Duration::from_secs(3),
            },
            Mode::Full => Plan {
                mode,
                workloads: WorkloadId::ALL.to_vec(),
                systems: System::ALL.to_vec(),
                rounds: 5,
                fault_rounds: 5,
                warmup: Duration::from_secs(1),
                duration: Duration::from_secs(10),
                clients: 32,
                w4_leases: 10_000,
                w5_ttls: vec![Duration::from_secs(2), Duration::from_secs(5)],
                w7_leases: 100_000,
                w7_rounds: 1,
                w7_expiry_wait: Duration::from_secs(300),
                w7_slack: Duration::from_secs(5),
                w8_clients: 2_000,
                w8_rounds: 3,
                // raftlock's default session TTL (`DEFAULT_SESSION_TTL`).
                w8_ttl: Duration::from_secs(10),
            },
        }
    }
}

mod secs {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

mod secs_list {
    use std::time::Duration;

    use serde::ser::SerializeSeq;

    pub fn serialize<S: serde::Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for d in v {
            seq.serialize_element(&d.as_secs_f64())?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_ids_parse_either_case() {
        assert_eq!("w3".parse::<WorkloadId>(), Ok(WorkloadId::W3));
        assert_eq!(" W7".parse::<WorkloadId>(), Ok(WorkloadId::W7));
        assert_eq!("w8".parse::<WorkloadId>(), Ok(WorkloadId::W8));
        assert!("W9".parse::<WorkloadId>().is_err());
    }

    #[test]
    fn smoke_is_smaller_than_full() {
        let (s, f) = (Plan::new(Mode::Smoke), Plan::new(Mode::Full));
        assert!(s.duration < f.duration && s.w7_leases < f.w7_leases);
        assert!(s.w8_clients < f.w8_clients && f.w8_clients == 2_000);
    }
}
