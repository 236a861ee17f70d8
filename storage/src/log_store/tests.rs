//! The write-ahead log's recovery, attacked file by file: torn tails are
//! cut, damage is refused with the segment and offset named, segments are
//! rotated and purged and a crash inside either leaves a log that opens.

use std::path::Path;

use super::record::Record;
use super::wal::{segment_name, Wal, WAL_DIR};
use crate::command::{Acquire, Command, Mode, Proposal, Request};
use crate::disk_sync::SyncMode;
use crate::error::Error;
use crate::types::{Entry, EntryPayload, LogId, TypeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

pub(super) fn log_id(index: u64) -> LogId {
    openraft::testing::log_id::<TypeConfig>(1, 1, index)
}

/// An entry of about `size` bytes.
pub(super) fn entry(index: u64, size: usize) -> Entry {
    let request = Request {
        origin: None,
        caller: Default::default(),
        time_ms: 0,
        command: Command::Acquire(Acquire {
            name: "n".repeat(size),
            owner: "o".into(),
            lease: 1,
            mode: Mode::Exclusive,
            wait: false,
            value: None,
            lock_delay_ms: 0,
        }),
    };
    Entry {
        log_id: log_id(index),
        payload: EntryPayload::Normal(Proposal::from(request)),
    }
}

fn open(dir: &Path) -> Result<Wal, Error> {
    Wal::open(dir, SyncMode::Fsync)
}

/// Writes entries `from..=to` of `size` bytes, one write each.
fn append(wal: &mut Wal, from: u64, to: u64, size: usize) -> Result<(), Error> {
    for i in from..=to {
        wal.write(vec![Record::Entry(entry(i, size))])?;
    }
    Ok(())
}

fn indexes(wal: &Wal) -> Vec<u64> {
    wal.state.entries.iter().map(|l| l.log_id.index).collect()
}

fn segment(dir: &Path, seq: u64) -> std::path::PathBuf {
    dir.join(WAL_DIR).join(segment_name(seq))
}

fn refused(result: Result<Wal, Error>, needle: &str) -> TestResult {
    match result {
        Err(e) if e.to_string().contains(needle) => Ok(()),
        Err(e) => Err(format!("refused, but not for {needle:?}: {e}").into()),
        Ok(wal) => Err(format!("opened with {:?}, expected {needle:?}", indexes(&wal)).into()),
    }
}

/// A write a crash interrupted (its frame says more bytes than the file
/// holds) is cut, and the log goes on from the last whole record. Without
/// the cut, the next write lands after the torn bytes and the log cannot
/// be read back past them.
#[test]
fn a_torn_tail_is_cut() -> TestResult {
    let dir = tempfile::tempdir()?;
    append(&mut open(dir.path())?, 1, 5, 10)?;
    let path = segment(dir.path(), 1);
    let whole = std::fs::metadata(&path)?.len();
    let mut bytes = std::fs::read(&path)?;
    bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9]);
    std::fs::write(&path, bytes)?;

    let mut wal = open(dir.path())?;
    assert_eq!(indexes(&wal), vec![1, 2, 3, 4, 5]);
    assert_eq!(std::fs::metadata(&path)?.len(), whole, "the tail is cut");
    append(&mut wal, 6, 6, 10)?;
    drop(wal);
    assert_eq!(indexes(&open(dir.path())?), vec![1, 2, 3, 4, 5, 6]);
    Ok(())
}

/// A last record with a whole sector of zeroes is a write the disk did not
/// finish: cut. The same record with one flipped byte instead is damage
/// (a record the disk wrote and then changed) and is refused, naming the
/// segment and the offset. Without the zero-sector rule both are refused
/// (or, with a rule that cuts any bad last record, both are cut).
#[test]
fn a_torn_last_record_is_cut_and_a_flipped_one_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    append(&mut open(dir.path())?, 1, 3, 3000)?;
    let path = segment(dir.path(), 1);
    let pristine = std::fs::read(&path)?;
    let last = open(dir.path())?.state.entries[2];

    let mut torn = pristine.clone();
    let sector = (last.offset as usize).div_ceil(512) * 512;
    torn[sector..sector + 512].fill(0);
    std::fs::write(&path, &torn)?;
    let wal = open(dir.path())?;
    assert_eq!(indexes(&wal), vec![1, 2]);
    drop(wal);

    let mut flipped = pristine;
    flipped[last.offset as usize + 100] ^= 0x01;
    std::fs::write(&path, &flipped)?;
    refused(open(dir.path()), "checksum mismatch")?;
    refused(open(dir.path()), &format!("at byte {}", last.offset))
}

/// A flipped byte in a record that is not the last is refused: it can
/// only be damage, and the records after it may have been acknowledged.
#[test]
fn a_flipped_byte_before_the_tail_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    append(&mut open(dir.path())?, 1, 5, 10)?;
    let second = open(dir.path())?.state.entries[1];
    let path = segment(dir.path(), 1);
    let mut bytes = std::fs::read(&path)?;
    bytes[second.offset as usize + 9] ^= 0x40;
    std::fs::write(&path, bytes)?;
    refused(open(dir.path()), "checksum mismatch")
}

/// Segments rotate when full and every entry reads back across them; a
/// purge deletes the segments it emptied (never the last), and the log
/// reopens with the same state.
#[test]
fn segments_rotate_and_purge_deletes_the_emptied_ones() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut wal = open(dir.path())?;
    wal.segment_bytes = 4096;
    wal.write(vec![Record::Vote(crate::types::Vote::new_committed(2, 1))])?;
    append(&mut wal, 1, 60, 300)?;
    let segments = wal.segments.len();
    assert!(segments >= 4, "only {segments} segments");
    drop(wal);

    let mut wal = open(dir.path())?;
    assert_eq!(indexes(&wal), (1..=60).collect::<Vec<_>>());
    let located = wal.locate(1, 60);
    let entries = super::reader::read(&located)?;
    assert_eq!(entries.len(), 60);
    assert!(entries.iter().zip(1..).all(|(e, i)| e.log_id.index == i));

    wal.write(vec![Record::Purged(log_id(40))])?;
    wal.remove_purged_segments()?;
    let left = wal.segments.len();
    assert!(left < segments, "{left} of {segments} segments left");
    drop(wal);
    let wal = open(dir.path())?;
    assert_eq!(indexes(&wal), (41..=60).collect::<Vec<_>>());
    assert_eq!(wal.state.purged, Some(log_id(40)));
    assert_eq!(wal.state.vote.map(|v| v.leader_id().term), Some(2));
    Ok(())
}

/// A purge whose segment deletions a crash interrupted (the purge record
/// synced, the files still there) reopens at the purge point.
#[test]
fn a_purge_interrupted_before_its_deletions_reopens() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut wal = open(dir.path())?;
    wal.segment_bytes = 4096;
    append(&mut wal, 1, 40, 300)?;
    wal.write(vec![Record::Purged(log_id(30))])?;
    drop(wal);
    let wal = open(dir.path())?;
    assert_eq!(indexes(&wal), (31..=40).collect::<Vec<_>>());
    Ok(())
}

/// A segment missing from the middle, or the first one while its entries
/// are not purged, is refused: the entries it held are gone. Without the
/// checks the log opens with a gap (middle) or silently shorter (first).
#[test]
fn a_deleted_segment_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut wal = open(dir.path())?;
    wal.segment_bytes = 4096;
    append(&mut wal, 1, 40, 300)?;
    assert!(wal.segments.len() >= 3);
    drop(wal);
    let copy = tempfile::tempdir()?;
    copy_dir(&dir.path().join(WAL_DIR), &copy.path().join(WAL_DIR))?;

    std::fs::remove_file(segment(dir.path(), 2))?;
    refused(open(dir.path()), "segment 2 is missing")?;

    std::fs::remove_file(segment(copy.path(), 1))?;
    refused(
        open(copy.path()),
        "are missing: the segment that held them is gone",
    )
}

/// A segment before the last that ends short is refused: rotation synced
/// it whole, so a short one is damage, not a crash.
#[test]
fn a_truncated_segment_before_the_last_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut wal = open(dir.path())?;
    wal.segment_bytes = 4096;
    append(&mut wal, 1, 40, 300)?;
    drop(wal);
    let path = segment(dir.path(), 1);
    let len = std::fs::metadata(&path)?.len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)?
        .set_len(len - 100)?;
    refused(open(dir.path()), "a segment before the last one ends torn")
}

/// A rotation a crash interrupted (the new segment created, its start
/// record not written) leaves an empty last segment: it held nothing
/// acknowledged and is removed; the log reopens whole and writes on.
#[test]
fn a_rotation_interrupted_before_its_start_record_reopens() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut wal = open(dir.path())?;
    wal.segment_bytes = 4096;
    append(&mut wal, 1, 20, 300)?;
    let next = wal.segments.keys().last().copied().ok_or("no segment")? + 1;
    drop(wal);
    std::fs::File::create(segment(dir.path(), next))?;
    let mut wal = open(dir.path())?;
    assert_eq!(indexes(&wal), (1..=20).collect::<Vec<_>>());
    assert!(!segment(dir.path(), next).exists());
    append(&mut wal, 21, 21, 300)?;
    Ok(())
}

/// A log whose first segment a crash left empty (the node's first start
/// interrupted before the segment's start record was synced) opens as a
/// new log instead of refusing the dir.
#[test]
fn a_first_segment_left_empty_by_a_crash_opens_as_a_new_log() -> TestResult {
    let dir = tempfile::tempdir()?;
    drop(open(dir.path())?);
    std::fs::write(segment(dir.path(), 1), b"")?;
    let mut wal = open(dir.path())?;
    assert!(indexes(&wal).is_empty());
    append(&mut wal, 1, 1, 10)?;
    drop(wal);
    assert_eq!(indexes(&open(dir.path())?), vec![1]);
    Ok(())
}

/// A file that is not a segment in the log's directory is refused rather
/// than ignored.
#[test]
fn an_unknown_file_in_the_log_directory_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    append(&mut open(dir.path())?, 1, 2, 10)?;
    std::fs::write(dir.path().join(WAL_DIR).join("stray"), b"x")?;
    refused(open(dir.path()), "an unknown file stray")
}

/// An append that does not follow the log's last entry is refused before
/// anything is written.
#[test]
fn an_entry_out_of_order_is_refused_at_write() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut wal = open(dir.path())?;
    append(&mut wal, 1, 3, 10)?;
    assert!(wal.state.check_next(5).is_err());
    assert!(wal.state.check_next(3).is_err());
    assert!(wal.state.check_next(4).is_ok());
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(())
}
