//! The write-ahead log's files: segments in the data dir's `wal/`
//! directory, named by their sequence number (`00000000000000000001.wal`).
//!
//! Records are only ever appended, with one `pwrite` per call, to the last
//! segment; a sync is one `fdatasync` of it. When a segment passes
//! [`SEGMENT_BYTES`] the next write first rotates: the full segment is
//! synced, the next one is created with a [`Record::Start`] holding the
//! log's whole state, synced, and the directory synced, so a sync of the
//! last segment always covers every record written before it. A purge
//! deletes the oldest segments whose entries are all purged, oldest first,
//! syncing the directory after each, so what a crash leaves is a suffix.
//!
//! [`Wal::open`] replays every segment through [`LogState`], cuts a torn
//! tail of the last one (see [`scan`]) and refuses anything else that is
//! not whole: damage in any record, a missing segment, a segment whose
//! start contradicts the one before.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::{frame, scan, End, Record};
use super::state::{Loc, LogState};
use crate::codec::FORMAT;
use crate::disk_sync::{fsync_path, io_error, SyncMode};
use crate::error::Error;

/// The directory of the log in a data dir.
pub const WAL_DIR: &str = "wal";

/// The size past which the next write starts a new segment.
#[cfg(not(feature = "small-wal-segments"))]
pub(super) const SEGMENT_BYTES: u64 = 16 << 20;
/// The size past which the next write starts a new segment: small, so
/// that the power-loss test cuts inside rotations (test builds only).
#[cfg(feature = "small-wal-segments")]
pub(super) const SEGMENT_BYTES: u64 = 64 << 10;

/// One segment file.
#[derive(Debug)]
pub(super) struct Segment {
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    /// Bytes written (and the offset of the next record).
    len: u64,
    /// The highest entry index written into it.
    last_index: Option<u64>,
}

/// The open log: its segments and its state.
#[derive(Debug)]
pub(super) struct Wal {
    dir: PathBuf,
    /// By sequence number; the last one is written to.
    pub(super) segments: BTreeMap<u64, Segment>,
    pub(super) state: LogState,
    mode: SyncMode,
    /// A write failed and could not be undone: refuse every later one.
    failed: bool,
    /// Where a segment is full (a field so tests can rotate often).
    pub(super) segment_bytes: u64,
}

impl Wal {
    /// Opens the log in `data_dir`'s `wal/` directory, creating it (and
    /// its first segment) when there is none.
    pub(super) fn open(data_dir: &Path, mode: SyncMode) -> Result<Self, Error> {
        Self::open_dir(&data_dir.join(WAL_DIR), mode)
    }

    /// [`Wal::open`] of the log in directory `dir` itself.
    pub(super) fn open_dir(dir: &Path, mode: SyncMode) -> Result<Self, Error> {
        let dir = dir.to_path_buf();
        let mut wal = Wal {
            dir: dir.clone(),
            segments: BTreeMap::new(),
            state: LogState::default(),
            mode,
            failed: false,
            segment_bytes: SEGMENT_BYTES,
        };
        if !dir.exists() {
            std::fs::create_dir(&dir).map_err(|e| io_error(&dir, "create", e))?;
            crate::private_dir::make_private(&dir)?;
            if let Some(parent) = dir.parent() {
                wal.sync_dir(parent)?;
            }
        }
        let seqs = segment_seqs(&dir)?;
        let last = seqs.last().copied();
        for (i, seq) in seqs.iter().enumerate() {
            if i > 0 && seqs[i - 1] + 1 != *seq {
                return Err(Error::Corrupt(format!(
                    "the Raft log's segment {} is missing (found {} and {seq})",
                    seqs[i - 1] + 1,
                    seqs[i - 1]
                )));
            }
            wal.replay(*seq, i == 0, Some(*seq) == last)?;
        }
        if let Some(missing) = wal.state.missing_up_to {
            return Err(Error::Corrupt(format!(
                "the Raft log's entries up to index {} are missing: the segment that held \
                 them is gone",
                missing.index
            )));
        }
        if wal.segments.is_empty() {
            wal.start_segment(1)?;
        }
        Ok(wal)
    }

    /// Replays segment `seq` into the state; cuts a torn tail if it is the
    /// `last` one.
    fn replay(&mut self, seq: u64, first: bool, last: bool) -> Result<(), Error> {
        let path = self.dir.join(segment_name(seq));
        let bytes = std::fs::read(&path).map_err(|e| io_error(&path, "read", e))?;
        let (found, end) = scan(&bytes);
        let damaged = |offset: u64, problem: &str| {
            Error::Corrupt(format!(
                "the Raft log's segment {} at byte {offset}: {problem}",
                path.display()
            ))
        };
        let len = match end {
            End::Clean => bytes.len() as u64,
            End::Torn(at) if last => at,
            End::Torn(at) => return Err(damaged(at, "a segment before the last one ends torn")),
            End::Damaged { offset, problem } => return Err(damaged(offset, &problem)),
        };
        match found.first().map(|f| &f.record) {
            Some(Record::Start { seq: s, format, .. }) if *s == seq && *format == FORMAT => {}
            Some(Record::Start { format, .. }) if *format != FORMAT => {
                return Err(Error::Format {
                    what: format!("the Raft log's segment {}", path.display()),
                    found: *format,
                    reads: FORMAT,
                })
            }
            // A segment whose creation a crash interrupted (a rotation, or
            // the log's very first segment): nothing in it was ever
            // acknowledged, as nothing is written to a segment before its
            // start is synced.
            None if last && (!first || seq == 1) => {
                std::fs::remove_file(&path).map_err(|e| io_error(&path, "remove", e))?;
                return self.sync_dir(&self.dir.clone());
            }
            _ => return Err(damaged(0, "it does not begin with its start record")),
        }
        let mut last_index = None;
        for (i, f) in found.iter().enumerate() {
            self.state
                .apply(&f.record, (seq, f.offset, f.len), first && i == 0)
                .map_err(|problem| damaged(f.offset, &problem))?;
            if let Record::Entry(e) = &f.record {
                last_index = Some(e.log_id.index);
            }
        }
        let file = open_segment(&path, false)?;
        if len < bytes.len() as u64 {
            tracing::warn!(
                segment = %path.display(),
                cut = bytes.len() as u64 - len,
                "cutting the torn tail of the Raft log (a write a crash interrupted)"
            );
            file.set_len(len)
                .and_then(|()| file.sync_all())
                .map_err(|e| io_error(&path, "cut the torn tail of", e))?;
        }
        self.segments.insert(
            seq,
            Segment {
                path,
                file: Arc::new(file),
                len,
                last_index,
            },
        );
        Ok(())
    }

    /// Creates segment `seq` holding its start record, durably.
    fn start_segment(&mut self, seq: u64) -> Result<(), Error> {
        let path = self.dir.join(segment_name(seq));
        let file = open_segment(&path, true)?;
        let mut bytes = Vec::new();
        let start = Record::Start {
            seq,
            format: FORMAT,
            state: self.state.checkpoint(),
        };
        frame(&start, &mut bytes).map_err(|e| Error::encode("a Raft log record", e))?;
        file.write_all_at(&bytes, 0)
            .map_err(|e| io_error(&path, "write", e))?;
        if self.mode == SyncMode::Fsync {
            file.sync_data()
                .map_err(|e| io_error(&path, "fdatasync", e))?;
        }
        self.sync_dir(&self.dir.clone())?;
        self.segments.insert(
            seq,
            Segment {
                path,
                file: Arc::new(file),
                len: bytes.len() as u64,
                last_index: None,
            },
        );
        Ok(())
    }

    /// Writes `records` with one `pwrite` to the last segment (rotating
    /// first if it is full) and applies them to the state. Not synced.
    pub(super) fn write(&mut self, records: Vec<Record>) -> Result<(), Error> {
        if self.failed {
            return Err(Error::Corrupt(
                "an earlier write to the Raft log failed and could not be undone".into(),
            ));
        }
        let mut bytes = Vec::new();
        let mut frames = Vec::with_capacity(records.len());
        for record in &records {
            let start = bytes.len();
            frame(record, &mut bytes).map_err(|e| Error::encode("a Raft log record", e))?;
            frames.push((start as u64, (bytes.len() - start) as u32));
        }
        let (&seq, segment) = self.current()?;
        if segment.len + bytes.len() as u64 > self.segment_bytes && segment.last_index.is_some() {
            self.rotate(seq)?;
        }
        let (&seq, segment) = self.current()?;
        let (at, file, mut last_index) = (segment.len, segment.file.clone(), segment.last_index);
        if let Err(e) = file.write_all_at(&bytes, at) {
            // Undo a partial write, so that the next one lands where the
            // log's last whole record ends.
            if file.set_len(at).is_err() {
                self.failed = true;
            }
            let path = self.dir.join(segment_name(seq));
            return Err(io_error(&path, "write", e));
        }
        for (record, (offset, len)) in records.iter().zip(frames) {
            // Checked by the caller before writing; a failure here means
            // the state and the file disagree from now on.
            if let Err(problem) = self.state.apply(record, (seq, at + offset, len), false) {
                self.failed = true;
                return Err(Error::Corrupt(problem));
            }
            if let Record::Entry(e) = record {
                last_index = Some(e.log_id.index);
            }
        }
        if let Some(segment) = self.segments.get_mut(&seq) {
            segment.len = at + bytes.len() as u64;
            segment.last_index = last_index;
        }
        Ok(())
    }

    /// The file a sync must cover (none when syncs are off).
    pub(super) fn to_sync(&self) -> Result<Option<(Arc<File>, PathBuf)>, Error> {
        if self.mode != SyncMode::Fsync {
            return Ok(None);
        }
        let (_, segment) = self.current()?;
        Ok(Some((segment.file.clone(), segment.path.clone())))
    }

    /// Deletes the oldest segments whose entries are all purged (never the
    /// last one), syncing the directory after each.
    pub(super) fn remove_purged_segments(&mut self) -> Result<(), Error> {
        let purged = self.state.purged.map(|p| p.index);
        while self.segments.len() > 1 {
            let Some(mut oldest) = self.segments.first_entry() else {
                break;
            };
            if oldest.get().last_index > purged {
                break;
            }
            let path = oldest.get_mut().path.clone();
            std::fs::remove_file(&path).map_err(|e| io_error(&path, "remove", e))?;
            oldest.remove();
            self.sync_dir(&self.dir.clone())?;
        }
        Ok(())
    }

    /// The location and file of each entry in `from..=to` the log holds.
    pub(super) fn locate(&self, from: u64, to: u64) -> Vec<(Loc, Arc<File>)> {
        let Some(first) = self.state.entries.front().map(|l| l.log_id.index) else {
            return Vec::new();
        };
        let Some(start) = self.state.find(from.max(first)) else {
            return Vec::new();
        };
        self.state
            .entries
            .iter()
            .skip(start)
            .take_while(|l| l.log_id.index <= to)
            .filter_map(|l| Some((*l, self.segments.get(&l.seq)?.file.clone())))
            .collect()
    }

    fn current(&self) -> Result<(&u64, &Segment), Error> {
        self.segments
            .last_key_value()
            .ok_or_else(|| Error::Corrupt("the Raft log has no segment".into()))
    }

    /// Syncs segment `seq` and starts the next one.
    fn rotate(&mut self, seq: u64) -> Result<(), Error> {
        if self.mode == SyncMode::Fsync {
            if let Some(segment) = self.segments.get(&seq) {
                segment
                    .file
                    .sync_data()
                    .map_err(|e| io_error(&segment.path, "fdatasync", e))?;
            }
        }
        self.start_segment(seq + 1)
    }

    fn sync_dir(&self, dir: &Path) -> Result<(), Error> {
        match self.mode {
            SyncMode::Fsync => fsync_path(dir),
            SyncMode::UnsafeSledFlushOnly => Ok(()),
        }
    }
}

/// The file name of segment `seq`.
pub(super) fn segment_name(seq: u64) -> String {
    format!("{seq:020}.wal")
}

/// The sequence numbers of the segments in `dir`, in order. Other files
/// are refused: nothing else is ever written there.
fn segment_seqs(dir: &Path) -> Result<Vec<u64>, Error> {
    let mut seqs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, "list", e))? {
        let name = entry.map_err(|e| io_error(dir, "list", e))?.file_name();
        let name = name.to_string_lossy();
        let seq = name
            .strip_suffix(".wal")
            .filter(|s| s.len() == 20)
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                Error::Corrupt(format!(
                    "an unknown file {name} in the Raft log's directory {}",
                    dir.display()
                ))
            })?;
        seqs.push(seq);
    }
    seqs.sort_unstable();
    Ok(seqs)
}

/// Opens a segment for reading and writing; `create` makes a new one.
fn open_segment(path: &Path, create: bool) -> Result<File, Error> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(create)
        .mode(crate::private_dir::FILE_MODE)
        .open(path)
        .map_err(|e| io_error(path, if create { "create" } else { "open" }, e))
}
