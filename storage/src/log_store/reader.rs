//! Reading entries back from their segments: one `pread` per run of
//! entries that sit together in one segment, each record's checksum
//! checked again (the disk may have changed it since the log was opened).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::record::{Record, FRAME_HEADER};
use super::state::Loc;
use crate::error::Error;
use crate::types::Entry;

/// Reads the entries at `located`, in order.
pub(super) fn read(located: &[(Loc, Arc<File>)]) -> Result<Vec<Entry>, Error> {
    let mut entries = Vec::with_capacity(located.len());
    let mut run_start = 0;
    while run_start < located.len() {
        // A run: entries of one segment, each after the one before.
        let (first, file) = &located[run_start];
        let mut run_end = run_start + 1;
        while located
            .get(run_end)
            .is_some_and(|(l, f)| Arc::ptr_eq(f, file) && l.offset > located[run_end - 1].0.offset)
        {
            run_end += 1;
        }
        let last = &located[run_end - 1].0;
        let span = last.offset + u64::from(last.len) - first.offset;
        let mut bytes = vec![0u8; usize::try_from(span).unwrap_or(usize::MAX)];
        file.read_exact_at(&mut bytes, first.offset).map_err(|e| {
            Error::Corrupt(format!(
                "cannot read log entries {}..={} back: {e}",
                first.log_id.index, last.log_id.index
            ))
        })?;
        for (loc, _) in &located[run_start..run_end] {
            let at = (loc.offset - first.offset) as usize;
            let frame = &bytes[at..at + loc.len as usize];
            entries.push(decode(loc, frame)?);
        }
        run_start = run_end;
    }
    Ok(entries)
}

/// Checks and decodes the frame of the entry at `loc`.
fn decode(loc: &Loc, frame: &[u8]) -> Result<Entry, Error> {
    let what = format!("log entry {}", loc.log_id.index);
    let (header, body) = frame.split_at(FRAME_HEADER.min(frame.len()));
    if header.len() < FRAME_HEADER {
        return Err(Error::corrupt(&what, "a record shorter than its frame"));
    }
    let stored = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(Error::Checksum {
            what,
            stored,
            computed,
        });
    }
    match postcard::from_bytes(body) {
        Ok(Record::Entry(entry)) if entry.log_id == loc.log_id => Ok(entry),
        Ok(_) => Err(Error::corrupt(&what, "another record stands where it was")),
        Err(e) => Err(Error::decode(what, e)),
    }
}
