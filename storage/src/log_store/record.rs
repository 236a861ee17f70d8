//! The records of the write-ahead log and how a segment file frames them.
//!
//! A segment is a sequence of records, each `length` (u32, little-endian),
//! `CRC32C` of the body (u32, little-endian), then the body: one
//! [`Record`] in postcard. The first record of every segment is a
//! [`Record::Start`] carrying the whole log state at that point, so that
//! the segments before it can be deleted once purged.
//!
//! [`scan`] reads a segment back and says how it ends: cleanly, with a torn
//! tail (a write a crash interrupted: it may be cut), or with damage (which
//! must be refused). The rules follow etcd's WAL: an incomplete last record
//! is torn; a last record whose checksum fails is torn only when a whole
//! 512-byte sector of it is zeroes (a write the disk did not finish);
//! anything else that fails its checksum is damage.

use serde::{Deserialize, Serialize};

use crate::types::{Entry, LogId, Vote};

/// `length` plus `CRC32C`.
pub(super) const FRAME_HEADER: usize = 8;

/// The largest record body a segment may hold; a longer length is damage.
/// (A log entry is bounded far below it by the peer message limit.)
pub(super) const MAX_RECORD: usize = 64 << 20;

/// The size of a disk sector, the unit a torn write leaves zeroes in.
const SECTOR: usize = 512;

/// The log's state at the start of a segment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    /// The saved vote.
    pub(super) vote: Option<Vote>,
    /// The committed log id last saved.
    pub(super) committed: Option<LogId>,
    /// The last purged log id.
    pub(super) purged: Option<LogId>,
    /// The last entry's id when the segment started: the entries after
    /// the purge point up to it are in earlier segments.
    pub(super) last: Option<LogId>,
}

/// One change to the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) enum Record {
    /// The first record of segment `seq`, in record format `format`.
    Start {
        seq: u64,
        format: u8,
        state: Checkpoint,
    },
    /// An appended entry: the next index after the log's last.
    Entry(Entry),
    /// The vote was saved.
    Vote(Vote),
    /// The committed log id was saved.
    Committed(Option<LogId>),
    /// Entries up to and including this id were purged.
    Purged(LogId),
    /// Entries after this id (all for `None`) were removed.
    TruncatedAfter(Option<LogId>),
}

/// Appends the frame of `record` to `out`.
pub(super) fn frame(record: &Record, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
    let body = postcard::to_stdvec(record)?;
    // A body is far below `u32::MAX`: entries are bounded by the peer
    // message limit, and [`MAX_RECORD`] refuses a longer one at read.
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

/// A record read back, with where its frame sits in the segment.
#[derive(Debug)]
pub(super) struct Found {
    pub(super) record: Record,
    /// The offset of its frame.
    pub(super) offset: u64,
    /// The length of its frame.
    pub(super) len: u32,
}

/// How a segment's bytes end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum End {
    /// Every byte belongs to a whole record (or is zero after the last).
    Clean,
    /// A write was interrupted at this offset: what follows may be cut.
    Torn(u64),
    /// A record at this offset is damaged: the segment must be refused.
    Damaged { offset: u64, problem: String },
}

/// Reads the records of one segment's `bytes`, up to the first that is
/// not whole.
pub(super) fn scan(bytes: &[u8]) -> (Vec<Found>, End) {
    let mut found = Vec::new();
    let mut at = 0usize;
    // Everything from here on is zero.
    let zero_from = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
    loop {
        let rest = &bytes[at..];
        if at >= zero_from {
            // The end, or zeroes a file system left past the last write.
            let end = if rest.is_empty() {
                End::Clean
            } else {
                End::Torn(at as u64)
            };
            return (found, end);
        }
        let damaged = |problem: String| End::Damaged {
            offset: at as u64,
            problem,
        };
        if rest.len() < FRAME_HEADER {
            return (found, End::Torn(at as u64));
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let stored = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if len > MAX_RECORD {
            return (found, damaged(format!("a record length of {len} bytes")));
        }
        let Some(body) = rest.get(FRAME_HEADER..FRAME_HEADER + len) else {
            return (found, End::Torn(at as u64));
        };
        let computed = crc32c::crc32c(body);
        let is_last = at + FRAME_HEADER + len >= zero_from;
        if stored != computed {
            let end = if is_last && has_zero_sector(at, &rest[..FRAME_HEADER + len]) {
                End::Torn(at as u64)
            } else {
                damaged(format!(
                    "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ))
            };
            return (found, end);
        }
        let record = match postcard::from_bytes(body) {
            Ok(record) => record,
            Err(e) => {
                return (
                    found,
                    damaged(format!("a record that does not decode: {e}")),
                )
            }
        };
        found.push(Found {
            record,
            offset: at as u64,
            len: (FRAME_HEADER + len) as u32,
        });
        at += FRAME_HEADER + len;
    }
}

/// Whether `frame`, at offset `at` of its file, holds a whole sector of
/// zeroes (a sector the disk never wrote).
fn has_zero_sector(at: usize, frame: &[u8]) -> bool {
    let first = at.div_ceil(SECTOR) * SECTOR;
    let mut start = first - at;
    while start + SECTOR <= frame.len() {
        if frame[start..start + SECTOR].iter().all(|b| *b == 0) {
            return true;
        }
        start += SECTOR;
    }
    false
}
