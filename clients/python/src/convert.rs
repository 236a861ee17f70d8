//! Values crossing to Python: durations in seconds, read-write steps by
//! name, and the read-only records the client answers (a lock's holders
//! and waiters, a leader, a lease's TTL, an election's record).

use std::borrow::Cow;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use raftlock_api::pb;
use raftlock_client::{Error, ReadWriteOp};
use raftlock_storage::limits::{MAX_LOCK_DELAY_MS, MAX_TTL_MS, MIN_TTL_MS};

use crate::run::to_py;

/// `value` seconds as a duration; `what` names the argument in the error.
pub fn secs(what: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be a finite number of seconds >= 0, not {value}"
        ))
    })
}

/// `value` seconds as a lease TTL, within what the cluster grants (1 ms to
/// a day): checked here, before any call, so that the error speaks seconds
/// and names the argument (`InvalidArgument`), and nothing is sent.
pub fn ttl_secs(what: &str, value: f64) -> PyResult<Duration> {
    let ttl = secs(what, value)?;
    let (min, max) = (
        Duration::from_millis(MIN_TTL_MS),
        Duration::from_millis(MAX_TTL_MS),
    );
    if ttl < min || ttl > max {
        return Err(to_py(Error::InvalidArgument(format!(
            "{what} {value} s is outside {}..{} s",
            min.as_secs_f64(),
            max.as_secs_f64()
        ))));
    }
    Ok(ttl)
}

/// `value` seconds as a lock-delay: at most the cluster's maximum (a
/// minute), checked before any call as [`ttl_secs`] is.
pub fn lock_delay_secs(value: f64) -> PyResult<Duration> {
    let delay = secs("lock_delay", value)?;
    let max = Duration::from_millis(MAX_LOCK_DELAY_MS);
    if delay > max {
        return Err(to_py(Error::InvalidArgument(format!(
            "lock_delay {value} s is above the {} s maximum",
            max.as_secs_f64()
        ))));
    }
    Ok(delay)
}

/// `Name(field=value, ...)`, each value as Python's `repr` shows it
/// (`None`, `b'..'`, lists, dicts), as a dataclass's repr reads.
pub fn py_repr(name: &str, fields: Vec<(&str, Bound<'_, PyAny>)>) -> PyResult<String> {
    let mut shown = Vec::with_capacity(fields.len());
    for (field, value) in fields {
        shown.push(format!("{field}={}", value.repr()?));
    }
    Ok(format!("{name}({})", shown.join(", ")))
}

/// [`py_repr`] of `Name` with `field = value` pairs, each value converted
/// to Python first.
macro_rules! repr_of {
    ($py:expr, $name:literal, $($field:ident = $value:expr),+ $(,)?) => {
        $crate::convert::py_repr(
            $name,
            vec![$((
                stringify!($field),
                pyo3::IntoPyObjectExt::into_bound_py_any($value, $py)?,
            )),+],
        )
    };
}
pub(crate) use repr_of;

fn mode_name(mode: i32) -> &'static str {
    match pb::LockMode::try_from(mode) {
        Ok(pb::LockMode::Shared) => "shared",
        Ok(pb::LockMode::Permits) => "permits",
        _ => "exclusive",
    }
}

/// One holder of a lock.
#[pyclass(module = "raftlock._native", frozen)]
#[derive(Clone)]
pub struct Holder {
    #[pyo3(get)]
    pub owner: String,
    #[pyo3(get)]
    pub lease: u64,
    #[pyo3(get)]
    pub mode: &'static str,
    #[pyo3(get)]
    pub permits: u32,
    #[pyo3(get)]
    pub fence: u64,
    #[pyo3(get)]
    pub count: u32,
    /// Seconds since granted.
    #[pyo3(get)]
    pub held: f64,
    pub(crate) value_bytes: Vec<u8>,
    /// Seconds the lock stays closed if this hold is lost.
    #[pyo3(get)]
    pub lock_delay: f64,
}

#[pymethods]
impl Holder {
    /// The value an election leader published.
    #[getter]
    fn value(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.value_bytes)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "Holder",
            owner = &self.owner,
            lease = self.lease,
            mode = self.mode,
            permits = self.permits,
            fence = self.fence,
            count = self.count,
            held = self.held,
            value = self.value_bytes.as_slice(),
            lock_delay = self.lock_delay,
        )
    }
}

/// One waiter of a lock, in queue order.
#[pyclass(module = "raftlock._native", frozen, get_all)]
#[derive(Clone)]
pub struct Waiter {
    pub owner: String,
    pub lease: u64,
    pub mode: &'static str,
    pub permits: u32,
    /// Seconds in the queue.
    pub waited: f64,
}

#[pymethods]
impl Waiter {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "Waiter",
            owner = &self.owner,
            lease = self.lease,
            mode = self.mode,
            permits = self.permits,
            waited = self.waited,
        )
    }
}

/// A lock as `describe` shows it.
#[pyclass(module = "raftlock._native", frozen, get_all)]
pub struct LockInfo {
    pub name: String,
    pub semaphore_limit: u32,
    pub holders: Vec<Holder>,
    pub waiters: Vec<Waiter>,
    /// Seconds the lock stays closed after a lost hold (0: none in force).
    pub delayed: f64,
}

#[pymethods]
impl LockInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "LockInfo",
            name = &self.name,
            semaphore_limit = self.semaphore_limit,
            holders = self.holders.clone(),
            waiters = self.waiters.clone(),
            delayed = self.delayed,
        )
    }
}

fn ms(ms: u64) -> f64 {
    Duration::from_millis(ms).as_secs_f64()
}

impl From<pb::LockInfo> for LockInfo {
    fn from(info: pb::LockInfo) -> Self {
        LockInfo {
            name: info.name,
            semaphore_limit: info.semaphore_limit,
            holders: info
                .holders
                .into_iter()
                .map(|h| Holder {
                    owner: h.owner,
                    lease: h.lease,
                    mode: mode_name(h.mode),
                    permits: h.permits,
                    fence: h.fence,
                    count: h.count,
                    held: ms(h.held_ms),
                    value_bytes: h.value,
                    lock_delay: ms(h.lock_delay_ms),
                })
                .collect(),
            waiters: info
                .waiters
                .into_iter()
                .map(|w| Waiter {
                    owner: w.owner,
                    lease: w.lease,
                    mode: mode_name(w.mode),
                    permits: w.permits,
                    waited: ms(w.waited_ms),
                })
                .collect(),
            delayed: ms(info.delayed_ms),
        }
    }
}

/// The leader of an election.
#[pyclass(module = "raftlock._native", frozen)]
pub struct LeaderInfo {
    #[pyo3(get)]
    pub owner: String,
    #[pyo3(get)]
    pub lease: u64,
    #[pyo3(get)]
    pub fence: u64,
    pub(crate) value_bytes: Vec<u8>,
}

#[pymethods]
impl LeaderInfo {
    /// The value the leader published (campaign or proclaim).
    #[getter]
    fn value(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.value_bytes)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "LeaderInfo",
            owner = &self.owner,
            lease = self.lease,
            fence = self.fence,
            value = self.value_bytes.as_slice(),
        )
    }
}

impl From<raftlock_client::LeaderInfo> for LeaderInfo {
    fn from(info: raftlock_client::LeaderInfo) -> Self {
        LeaderInfo {
            owner: info.owner,
            lease: info.lease,
            fence: info.fence,
            value_bytes: info.value,
        }
    }
}

/// A lease's TTL, the time it has left and what it holds.
#[pyclass(module = "raftlock._native", frozen, get_all)]
pub struct LeaseTtl {
    /// Seconds.
    pub granted_ttl: f64,
    /// Seconds left by the leader's timer.
    pub remaining: Option<f64>,
    /// `(lock name, owner, held)`: held, or waiting.
    pub attachments: Vec<(String, String, bool)>,
}

#[pymethods]
impl LeaseTtl {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "LeaseTtl",
            granted_ttl = self.granted_ttl,
            remaining = self.remaining,
            attachments = &self.attachments,
        )
    }
}

impl From<raftlock_client::LeaseTtl> for LeaseTtl {
    fn from(t: raftlock_client::LeaseTtl) -> Self {
        LeaseTtl {
            granted_ttl: t.granted_ttl.as_secs_f64(),
            remaining: t.remaining.map(|d| d.as_secs_f64()),
            attachments: t.attachments,
        }
    }
}

/// An election's record (grelmicro's `LeaderRecord`).
#[pyclass(module = "raftlock._native", frozen, get_all)]
pub struct LeadRecord {
    /// The owner token that leads; empty when nobody does.
    pub holder: String,
    /// The lead's TTL, seconds.
    pub ttl: f64,
    /// When the holder took the lead, ms since the Unix epoch.
    pub acquired_at_ms: u64,
    /// When it last renewed.
    pub renewed_at_ms: u64,
    /// How many times the lead passed to another owner.
    pub transitions: u64,
    /// What the holder published.
    pub metadata: std::collections::HashMap<String, String>,
}

#[pymethods]
impl LeadRecord {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of!(
            py,
            "LeadRecord",
            holder = &self.holder,
            ttl = self.ttl,
            acquired_at_ms = self.acquired_at_ms,
            renewed_at_ms = self.renewed_at_ms,
            transitions = self.transitions,
            metadata = &self.metadata,
        )
    }
}

impl From<raftlock_client::LeadRecord> for LeadRecord {
    fn from(r: raftlock_client::LeadRecord) -> Self {
        LeadRecord {
            holder: r.holder,
            ttl: r.ttl.as_secs_f64(),
            acquired_at_ms: r.acquired_at_ms,
            renewed_at_ms: r.renewed_at_ms,
            transitions: r.transitions,
            metadata: r.metadata,
        }
    }
}

/// A read-write step by its Python name.
pub fn read_write_op(op: &str) -> PyResult<ReadWriteOp> {
    Ok(match op {
        "read" => ReadWriteOp::Read,
        "write" => ReadWriteOp::Write,
        "release_read" => ReadWriteOp::ReleaseRead,
        "release_write" => ReadWriteOp::ReleaseWrite,
        "cancel_intent" => ReadWriteOp::CancelIntent,
        "downgrade" => ReadWriteOp::Downgrade,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown read-write step {other:?}"
            )))
        }
    })
}
