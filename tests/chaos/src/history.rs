//! The recorded history: what each client asked for ([`Op`]), when, and how
//! it ended ([`Outcome`]). Client processes print one [`Event`] per line on
//! stdout; the harness folds them into [`Operation`]s.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Identifies one operation: client process, worker in it, sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OpId {
    pub client: u32,
    pub worker: u32,
    pub seq: u64,
}

/// How a lock is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Exclusive,
    Shared,
    Permits { count: u32, limit: u32 },
}

/// What a client asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    GrantLease {
        ttl_ms: u64,
    },
    KeepAlive {
        lease: u64,
    },
    Revoke {
        lease: u64,
    },
    Acquire {
        name: String,
        owner: String,
        lease: u64,
        mode: Mode,
        wait: bool,
    },
    Release {
        name: String,
        owner: String,
    },
    Check {
        name: String,
        fence: u64,
    },
    Campaign {
        name: String,
        owner: String,
        lease: u64,
    },
    Resign {
        name: String,
        owner: String,
    },
    Leader {
        name: String,
    },
    RegRead {
        name: String,
        fence: u64,
    },
    RegWrite {
        name: String,
        fence: u64,
        value: u64,
    },
}

impl Op {
    /// A short name for counting.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::GrantLease { .. } => "grant_lease",
            Op::KeepAlive { .. } => "keep_alive",
            Op::Revoke { .. } => "revoke",
            Op::Acquire { wait: true, .. } => "acquire",
            Op::Acquire { wait: false, .. } => "try_acquire",
            Op::Release { .. } => "release",
            Op::Check { .. } => "check",
            Op::Campaign { .. } => "campaign",
            Op::Resign { .. } => "resign",
            Op::Leader { .. } => "leader",
            Op::RegRead { .. } => "register_read",
            Op::RegWrite { .. } => "register_write",
        }
    }

    /// The lock, election or register name the op is about, if any.
    pub fn name(&self) -> Option<&str> {
        match self {
            Op::Acquire { name, .. }
            | Op::Release { name, .. }
            | Op::Check { name, .. }
            | Op::Campaign { name, .. }
            | Op::Resign { name, .. }
            | Op::Leader { name }
            | Op::RegRead { name, .. }
            | Op::RegWrite { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The lease the op is about, if any.
    pub fn lease(&self) -> Option<u64> {
        match self {
            Op::KeepAlive { lease }
            | Op::Revoke { lease }
            | Op::Acquire { lease, .. }
            | Op::Campaign { lease, .. } => Some(*lease),
            _ => None,
        }
    }
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "v", rename_all = "snake_case")]
pub enum Value {
    Unit,
    Lease {
        id: u64,
    },
    Granted {
        fence: u64,
        count: u32,
    },
    /// A try-lock found the lock taken.
    Busy,
    Remaining {
        count: u32,
    },
    Valid {
        valid: bool,
    },
    Leader {
        owner: Option<String>,
        fence: u64,
    },
    Register {
        value: u64,
    },
}

/// A definite failure: the operation did not take effect (or, for
/// `LeaseExpired`, proves the lease dead).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    LeaseExpired,
    NotHeld,
    /// A wait ran out of time and the server cancelled it.
    Timeout,
    WaitEnded,
    InvalidArgument,
    LimitReached,
    /// The register refused a fence lower than one it has seen.
    Stale {
        max_fence: u64,
    },
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "o", rename_all = "snake_case")]
pub enum Outcome {
    Ok(Value),
    Fail(Failure),
    /// Indeterminate: it may or may not have taken effect.
    Info {
        reason: String,
    },
}

/// One line a client process prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    Invoke {
        id: OpId,
        t: u64,
        op: Op,
    },
    Complete {
        id: OpId,
        t: u64,
        outcome: Outcome,
    },
    /// An item of an Observe stream.
    Observed {
        client: u32,
        stream: u32,
        t: u64,
        name: String,
        owner: Option<String>,
        fence: u64,
    },
}

/// One operation with its time span. `complete == None` means no answer was
/// recorded (the client was stopped first): indeterminate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    pub id: OpId,
    pub op: Op,
    pub invoke: u64,
    pub complete: Option<u64>,
    pub outcome: Option<Outcome>,
}

impl Operation {
    /// Whether it may or may not have taken effect.
    pub fn indeterminate(&self) -> bool {
        !matches!(self.outcome, Some(Outcome::Ok(_)) | Some(Outcome::Fail(_)))
    }

    /// The successful answer, if any.
    pub fn ok(&self) -> Option<&Value> {
        match &self.outcome {
            Some(Outcome::Ok(v)) => Some(v),
            _ => None,
        }
    }

    /// The definite failure, if any.
    pub fn failure(&self) -> Option<&Failure> {
        match &self.outcome {
            Some(Outcome::Fail(f)) => Some(f),
            _ => None,
        }
    }

    /// Completion time, or "never" for indeterminate ops.
    pub fn complete_or_max(&self) -> u64 {
        if self.indeterminate() {
            u64::MAX
        } else {
            self.complete.unwrap_or(u64::MAX)
        }
    }

    /// "ok" / "fail" / "info", for counting.
    pub fn outcome_kind(&self) -> &'static str {
        match &self.outcome {
            Some(Outcome::Ok(_)) => "ok",
            Some(Outcome::Fail(_)) => "fail",
            _ => "info",
        }
    }

    /// The fence of a grant (acquire or campaign), if this op is one.
    pub fn granted_fence(&self) -> Option<u64> {
        match (&self.op, self.ok()?) {
            (Op::Acquire { .. } | Op::Campaign { .. }, Value::Granted { fence, .. }) => {
                Some(*fence)
            }
            _ => None,
        }
    }
}

/// Formats times relative to a run's start.
pub struct Show<'a> {
    pub op: &'a Operation,
    pub t0: u64,
}

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |t: u64| t.saturating_sub(self.t0) as f64 / 1e9;
        let o = self.op;
        let end = match o.complete {
            Some(t) => format!("{:.3}", secs(t)),
            None => "?".into(),
        };
        let outcome = match &o.outcome {
            Some(Outcome::Ok(v)) => format!("ok {}", serde_json::to_string(v).unwrap_or_default()),
            Some(Outcome::Fail(e)) => format!("fail {e:?}"),
            Some(Outcome::Info { reason }) => format!("info {reason}"),
            None => "no answer".into(),
        };
        write!(
            f,
            "[{:>8.3}s..{end:>8}s] c{}/w{}#{} {} -> {}",
            secs(o.invoke),
            o.id.client,
            o.id.worker,
            o.id.seq,
            serde_json::to_string(&o.op).unwrap_or_default(),
            outcome
        )
    }
}

/// An Observe stream item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub client: u32,
    pub stream: u32,
    pub t: u64,
    pub name: String,
    pub owner: Option<String>,
    pub fence: u64,
}

/// Everything the clients recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct History {
    /// Operations sorted by invocation time.
    pub ops: Vec<Operation>,
    pub observations: Vec<Observation>,
}

impl History {
    /// Folds events (in any order) into operations.
    pub fn from_events(events: impl IntoIterator<Item = Event>) -> History {
        let mut ops: BTreeMap<OpId, Operation> = BTreeMap::new();
        let mut completions = Vec::new();
        let mut observations = Vec::new();
        for event in events {
            match event {
                Event::Invoke { id, t, op } => {
                    ops.insert(
                        id,
                        Operation {
                            id,
                            op,
                            invoke: t,
                            complete: None,
                            outcome: None,
                        },
                    );
                }
                Event::Complete { id, t, outcome } => completions.push((id, t, outcome)),
                Event::Observed {
                    client,
                    stream,
                    t,
                    name,
                    owner,
                    fence,
                } => observations.push(Observation {
                    client,
                    stream,
                    t,
                    name,
                    owner,
                    fence,
                }),
            }
        }
        for (id, t, outcome) in completions {
            if let Some(op) = ops.get_mut(&id) {
                op.complete = Some(t);
                op.outcome = Some(outcome);
            }
        }
        let mut ops: Vec<Operation> = ops.into_values().collect();
        ops.sort_by_key(|o| (o.invoke, o.id));
        observations.sort_by_key(|o| (o.client, o.stream, o.t));
        History { ops, observations }
    }
}
