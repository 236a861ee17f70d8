//! File data: volatile until fsync or fdatasync of that file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;

use crate::fixture::{mount, sync_dir, write_durable};

/// Fails if writes were durable without an fsync (no volatile layer).
#[test]
fn write_without_fsync_is_gone_after_a_cut() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    write_durable(&path, b"");
    std::fs::write(&path, b"never synced").expect("write");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b"never synced",
        "reads see the volatile view"
    );
    m.cut();
    assert_eq!(std::fs::read(&path).expect("read"), b"");
    assert!(m.fs.stats().last_cut_dropped_bytes >= 12);
}

/// Fails if fsync did not make data durable.
#[test]
fn write_with_fsync_is_kept() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    write_durable(&path, b"synced");
    m.cut();
    assert_eq!(std::fs::read(&path).expect("read"), b"synced");
}

/// Fails if fdatasync did not cover the size (a sparse growth past the end).
#[test]
fn fdatasync_keeps_size_growth() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    write_durable(&path, b"head");
    let file = OpenOptions::new().write(true).open(&path).expect("open");
    file.write_all_at(b"tail", 100_000).expect("pwrite");
    file.sync_data().expect("fdatasync");
    drop(file);
    m.cut();
    let bytes = std::fs::read(&path).expect("read");
    assert_eq!(bytes.len(), 100_004);
    assert_eq!(&bytes[..4], b"head");
    assert!(
        bytes[4..100_000].iter().all(|&b| b == 0),
        "the hole reads as zeros"
    );
    assert_eq!(&bytes[100_000..], b"tail");
}

/// Fails if a truncate (shrink or growth) was durable without an fsync.
#[test]
fn unsynced_truncate_reverts() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    let content: Vec<u8> = (0..10_000u32).map(|i| (i % 256) as u8).collect();
    write_durable(&path, &content);
    let file = OpenOptions::new().write(true).open(&path).expect("open");
    file.set_len(3).expect("ftruncate");
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), 3);
    drop(file);
    m.cut();
    assert_eq!(std::fs::read(&path).expect("read"), content);

    let file = OpenOptions::new().write(true).open(&path).expect("open");
    file.set_len(1 << 20).expect("grow");
    drop(file);
    m.cut();
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), 10_000);
}

/// Fails if unsynced overwrites leaked into shared (durable) pages.
#[test]
fn unsynced_overwrite_in_the_middle_reverts_to_the_old_bytes() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    write_durable(&path, &[b'a'; 20_000]);
    let file = OpenOptions::new().write(true).open(&path).expect("open");
    file.write_all_at(&[b'b'; 5_000], 7_000).expect("pwrite");
    drop(file);
    let mut now = Vec::new();
    File::open(&path)
        .and_then(|mut f| f.read_to_end(&mut now))
        .expect("read");
    assert_eq!(&now[7_000..12_000], &[b'b'; 5_000]);
    m.cut();
    assert_eq!(std::fs::read(&path).expect("read"), vec![b'a'; 20_000]);
}

/// Fails if a sync of one file also made another file's data durable.
#[test]
fn fsync_covers_only_its_own_file() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("a"), b"");
    write_durable(&m.path("b"), b"");
    let mut a = OpenOptions::new().write(true).open(m.path("a")).expect("a");
    let mut b = OpenOptions::new().write(true).open(m.path("b")).expect("b");
    a.write_all(b"A").expect("write a");
    b.write_all(b"B").expect("write b");
    a.sync_all().expect("fsync a");
    drop((a, b));
    sync_dir(m.fs.mountpoint());
    m.cut();
    assert_eq!(std::fs::read(m.path("a")).expect("a"), b"A");
    assert_eq!(std::fs::read(m.path("b")).expect("b"), b"");
}

/// Fails if a handle open across the cut could still read or write the new
/// state as if nothing happened (the model says it is stale).
#[test]
fn handles_open_at_the_cut_are_stale() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    write_durable(&path, b"data");
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("open");
    m.cut();
    let mut buf = Vec::new();
    assert!(file.read_to_end(&mut buf).is_err());
    assert!(file.write_all(b"x").is_err());
    assert!(file.sync_all().is_err());
    drop(file);
    assert_eq!(std::fs::read(&path).expect("reopen"), b"data");
}

/// Fails if the counters miss calls.
#[test]
fn stats_count_fsyncs_fsyncdirs_and_writes() {
    let Some(m) = mount() else { return };
    let before = m.fs.stats();
    write_durable(&m.path("f"), b"x");
    let after = m.fs.stats();
    assert_eq!(after.fsync_calls - before.fsync_calls, 1);
    assert_eq!(after.fsyncdir_calls - before.fsyncdir_calls, 1);
    assert_eq!(after.write_calls - before.write_calls, 1);
    m.cut();
    assert_eq!(m.fs.stats().cuts, after.cuts + 1);
}
