//! One regular file's bytes: the current view every read sees, and the durable
//! view the last fsync left, sharing every page that did not change in between.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::limits::PAGE_SIZE;

/// One page of file data. Shared (`Arc`) between the current and the durable
/// view until a write copies it (`Arc::make_mut`).
type Page = Arc<[u8; PAGE_SIZE as usize]>;

/// The bytes of a regular file in two views.
///
/// Invariants: a page index not in `dirty` maps to the same page (or to no
/// page) in both views; every byte at or past `size` in a present page is zero,
/// so growing a file (by `set_size` or a write past a hole) exposes zeros.
#[derive(Debug, Default)]
pub(crate) struct FileData {
    /// Pages of the current view; a missing page reads as zeros (a hole).
    pages: BTreeMap<u64, Page>,
    /// Size of the current view in bytes.
    size: u64,
    /// Pages as of the last sync.
    durable_pages: BTreeMap<u64, Page>,
    /// Size as of the last sync.
    durable_size: u64,
    /// Page indices that may differ between the views: exactly what a sync
    /// copies and a cut reverts, so both cost O(pages written), not O(file).
    dirty: BTreeSet<u64>,
}

impl FileData {
    /// Size of the current view in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Size the file would have after a power cut.
    pub(crate) fn durable_size(&self) -> u64 {
        self.durable_size
    }

    /// Pages allocated in the current view (holes take none).
    pub(crate) fn allocated_pages(&self) -> u64 {
        self.pages.len() as u64
    }

    /// Whether anything differs from the durable view.
    #[cfg(test)]
    pub(crate) fn is_unsynced(&self) -> bool {
        !self.dirty.is_empty() || self.size != self.durable_size
    }

    /// Pages a write of `len` bytes at `offset` would have to allocate.
    pub(crate) fn pages_missing_for(&self, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let first = offset / PAGE_SIZE;
        let last = (offset + len - 1) / PAGE_SIZE;
        let present = self.pages.range(first..=last).count() as u64;
        last - first + 1 - present
    }

    /// Up to `len` bytes from `offset`, fewer at end of file.
    pub(crate) fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        let end = self.size.min(offset.saturating_add(len));
        if offset >= end {
            return Vec::new();
        }
        let mut out = vec![0; to_usize(end - offset)];
        for (&index, page) in self.pages.range(offset / PAGE_SIZE..=(end - 1) / PAGE_SIZE) {
            let page_start = index * PAGE_SIZE;
            let from = offset.max(page_start);
            let to = end.min(page_start + PAGE_SIZE);
            out[to_usize(from - offset)..to_usize(to - offset)]
                .copy_from_slice(&page[to_usize(from - page_start)..to_usize(to - page_start)]);
        }
        out
    }

    /// Writes `data` at `offset`, growing the file if it ends past the size.
    /// The caller has checked that `offset + data.len()` is within bounds.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) {
        let end = offset + data.len() as u64;
        let mut pos = offset;
        while pos < end {
            let index = pos / PAGE_SIZE;
            let page_start = index * PAGE_SIZE;
            let to = end.min(page_start + PAGE_SIZE);
            let page = self.pages.entry(index).or_insert_with(zero_page);
            Arc::make_mut(page)[to_usize(pos - page_start)..to_usize(to - page_start)]
                .copy_from_slice(&data[to_usize(pos - offset)..to_usize(to - offset)]);
            self.dirty.insert(index);
            pos = to;
        }
        self.size = self.size.max(end);
    }

    /// Truncates or extends (with zeros) the current view to `size` bytes.
    pub(crate) fn set_size(&mut self, size: u64) {
        if size < self.size {
            let gone = self.pages.split_off(&size.div_ceil(PAGE_SIZE));
            self.dirty.extend(gone.keys());
            let tail = size % PAGE_SIZE;
            let last = size / PAGE_SIZE;
            if tail != 0 {
                if let Some(page) = self.pages.get_mut(&last) {
                    Arc::make_mut(page)[to_usize(tail)..].fill(0);
                    self.dirty.insert(last);
                }
            }
        }
        self.size = size;
    }

    /// Makes the current view durable (fsync / fdatasync).
    pub(crate) fn sync(&mut self) {
        for index in std::mem::take(&mut self.dirty) {
            match self.pages.get(&index) {
                Some(page) => self.durable_pages.insert(index, Arc::clone(page)),
                None => self.durable_pages.remove(&index),
            };
        }
        self.durable_size = self.size;
    }

    /// Drops everything written since the last sync, as a power cut would.
    /// Returns the bytes dropped: whole unsynced pages, clipped to the size.
    pub(crate) fn revert(&mut self) -> u64 {
        let mut dropped = 0;
        for index in std::mem::take(&mut self.dirty) {
            if self.pages.contains_key(&index) {
                dropped += PAGE_SIZE.min(self.size.saturating_sub(index * PAGE_SIZE));
            }
            match self.durable_pages.get(&index) {
                Some(page) => self.pages.insert(index, Arc::clone(page)),
                None => self.pages.remove(&index),
            };
        }
        self.size = self.durable_size;
        dropped
    }
}

/// A fresh page of zeros.
fn zero_page() -> Page {
    Arc::new([0; PAGE_SIZE as usize])
}

/// Converts an in-memory length or offset; every caller's value is bounded by
/// a page or by a `u32` request size, so this cannot fail on 64-bit targets.
fn to_usize(value: u64) -> usize {
    usize::try_from(value).expect("in-memory lengths fit in usize (bounded by a request)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> FileData {
        let mut file = FileData::default();
        file.write(0, bytes);
        file
    }

    #[test]
    fn reads_what_was_written_across_pages() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let file = file_with(&data);
        assert_eq!(file.size(), 10_000);
        assert_eq!(file.read(0, 20_000), data);
        assert_eq!(file.read(4090, 20), data[4090..4110]);
        assert!(file.read(10_000, 5).is_empty());
    }

    #[test]
    fn holes_read_as_zeros_and_take_no_pages() {
        let mut file = FileData::default();
        file.write(3 * PAGE_SIZE + 10, b"xy");
        assert_eq!(file.size(), 3 * PAGE_SIZE + 12);
        assert_eq!(file.allocated_pages(), 1);
        let all = file.read(0, u64::MAX);
        assert!(all[..to_usize(3 * PAGE_SIZE + 10)].iter().all(|&b| b == 0));
        assert_eq!(&all[to_usize(3 * PAGE_SIZE + 10)..], b"xy");
    }

    #[test]
    fn revert_drops_unsynced_writes_and_keeps_synced_ones() {
        let mut file = file_with(b"durable");
        file.sync();
        file.write(2, b"XX");
        file.write(PAGE_SIZE * 5, b"far");
        assert!(file.is_unsynced());
        let dropped = file.revert();
        assert_eq!(
            dropped,
            PAGE_SIZE + 3,
            "whole dirty pages, the last clipped to the size"
        );
        assert_eq!(file.read(0, 100), b"durable");
        assert_eq!(file.allocated_pages(), 1);
        assert!(!file.is_unsynced());
    }

    #[test]
    fn revert_restores_a_truncated_tail() {
        let mut file = file_with(&[7; 9000]);
        file.sync();
        file.set_size(10);
        assert_eq!(file.read(0, 100_000).len(), 10);
        file.revert();
        assert_eq!(file.read(0, 100_000), vec![7; 9000]);
    }

    #[test]
    fn shrink_then_grow_exposes_zeros_not_old_bytes() {
        let mut file = file_with(&[9; 100]);
        file.set_size(10);
        file.set_size(100);
        let bytes = file.read(0, 100);
        assert_eq!(&bytes[..10], &[9; 10]);
        assert_eq!(&bytes[10..], &[0; 90]);
    }

    #[test]
    fn sync_shares_pages_instead_of_copying() {
        let mut file = file_with(&[1; 3 * PAGE_SIZE as usize]);
        file.sync();
        for (index, page) in &file.pages {
            assert!(Arc::ptr_eq(page, &file.durable_pages[index]));
        }
        file.write(PAGE_SIZE, b"z");
        assert!(!Arc::ptr_eq(&file.pages[&1], &file.durable_pages[&1]));
        assert!(Arc::ptr_eq(&file.pages[&0], &file.durable_pages[&0]));
    }

    #[test]
    fn pages_missing_for_counts_only_holes() {
        let mut file = FileData::default();
        file.write(PAGE_SIZE, b"a");
        assert_eq!(file.pages_missing_for(0, 3 * PAGE_SIZE), 2);
        assert_eq!(file.pages_missing_for(PAGE_SIZE, 1), 0);
        assert_eq!(file.pages_missing_for(0, 0), 0);
    }
}
