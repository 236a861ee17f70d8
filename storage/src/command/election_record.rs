//! [`ElectionRecord`]: an election's record as the state keeps it and
//! [`Response::Led`](super::Response::Led) answers it.

use serde::{Deserialize, Serialize};

/// The record of an election led through
/// [`Command::Lead`](crate::command::Command::Lead), kept after its lease
/// ends so that the next leader counts one more transition; gone when its
/// holder releases it. Times are the proposing leader's clock, carried in
/// the entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElectionRecord {
    /// The owner token that leads (or led last).
    pub holder: String,
    /// The lead's TTL, from its last renewal.
    pub ttl_ms: u64,
    /// When `holder` took the lead, ms since the Unix epoch.
    pub acquired_at_ms: u64,
    /// When `holder` last renewed it.
    pub renewed_at_ms: u64,
    /// How many times the lead passed to another owner.
    pub transitions: u64,
    /// What the holder published, sorted by key.
    pub metadata: Vec<(String, String)>,
}
