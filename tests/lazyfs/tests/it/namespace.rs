//! Names: volatile until fsync of the directory holding them.

use std::fs::File;
use std::os::unix::fs::MetadataExt;

use crate::fixture::{mount, sync_dir, write_durable, write_synced};

/// Fails if a name became durable without a directory fsync (the strict model).
#[test]
fn created_and_fsynced_file_without_dir_fsync_is_gone() {
    let Some(m) = mount() else { return };
    write_synced(&m.path("f"), b"data synced, name not");
    m.cut();
    assert!(!m.path("f").exists());
}

/// Fails if fsync of the directory did not make the name durable.
#[test]
fn created_file_with_dir_fsync_is_kept() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("f"), b"both synced");
    m.cut();
    assert_eq!(std::fs::read(m.path("f")).expect("read"), b"both synced");
}

/// Fails if a directory fsync also made the file's unsynced data durable.
#[test]
fn dir_fsync_keeps_the_name_but_not_unsynced_data() {
    let Some(m) = mount() else { return };
    std::fs::write(m.path("f"), b"data never synced").expect("write");
    sync_dir(m.fs.mountpoint());
    m.cut();
    assert_eq!(std::fs::read(m.path("f")).expect("read"), b"");
}

/// Fails if a rename was durable without a directory fsync.
#[test]
fn unsynced_rename_reverts() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("old"), b"content");
    std::fs::rename(m.path("old"), m.path("new")).expect("rename");
    m.cut();
    assert_eq!(
        std::fs::read(m.path("old")).expect("old is back"),
        b"content"
    );
    assert!(!m.path("new").exists());
}

/// Fails if an unlink was durable without a directory fsync.
#[test]
fn unsynced_unlink_reverts() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("f"), b"content");
    std::fs::remove_file(m.path("f")).expect("unlink");
    assert!(!m.path("f").exists());
    m.cut();
    assert_eq!(std::fs::read(m.path("f")).expect("f is back"), b"content");
}

/// Fails if rename over an existing target lost either side: the classic
/// write-temp, fsync, rename, fsync-dir update must land atomically.
#[test]
fn rename_over_existing_target_with_dir_fsync_keeps_the_new_content() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("target"), b"old");
    write_synced(&m.path("tmp"), b"new");
    std::fs::rename(m.path("tmp"), m.path("target")).expect("rename");
    sync_dir(m.fs.mountpoint());
    m.cut();
    assert_eq!(std::fs::read(m.path("target")).expect("read"), b"new");
    assert!(!m.path("tmp").exists());
}

/// Fails if the replaced target was lost (or the temp file kept) when the
/// directory was not synced after the rename.
#[test]
fn rename_over_existing_target_without_dir_fsync_keeps_the_old_content() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("target"), b"old");
    write_synced(&m.path("tmp"), b"new");
    std::fs::rename(m.path("tmp"), m.path("target")).expect("rename");
    m.cut();
    assert_eq!(std::fs::read(m.path("target")).expect("read"), b"old");
    assert!(!m.path("tmp").exists(), "tmp's name was never synced");
}

/// Fails if a cross-directory rename needed fewer than both directories synced.
#[test]
fn rename_between_directories_needs_both_synced() {
    let Some(m) = mount() else { return };
    for dir in ["a", "b"] {
        std::fs::create_dir(m.path(dir)).expect("mkdir");
    }
    sync_dir(m.fs.mountpoint());
    write_durable(&m.path("a/f"), b"moving");
    sync_dir(&m.path("b"));

    std::fs::rename(m.path("a/f"), m.path("b/f")).expect("rename");
    sync_dir(&m.path("a"));
    m.cut();
    assert!(
        !m.path("a/f").exists() && !m.path("b/f").exists(),
        "only the source was synced"
    );

    write_durable(&m.path("a/f"), b"moving");
    std::fs::rename(m.path("a/f"), m.path("b/f")).expect("rename");
    sync_dir(&m.path("b"));
    m.cut();
    assert!(
        m.path("a/f").exists() && m.path("b/f").exists(),
        "only the target was synced"
    );
    assert_eq!(std::fs::metadata(m.path("b/f")).expect("stat").nlink(), 2);

    std::fs::remove_file(m.path("a/f")).expect("unlink");
    sync_dir(&m.path("a"));
    m.cut();
    assert!(!m.path("a/f").exists());
    assert_eq!(std::fs::read(m.path("b/f")).expect("read"), b"moving");
}

/// Fails if mkdir/rmdir were durable without an fsync of the parent, or if a
/// synced subtree survived under an unsynced parent.
#[test]
fn directories_follow_the_same_rules() {
    let Some(m) = mount() else { return };
    std::fs::create_dir_all(m.path("new/sub")).expect("mkdir -p");
    write_durable(&m.path("new/sub/f"), b"deep");
    sync_dir(&m.path("new"));
    m.cut();
    assert!(!m.path("new").exists(), "the root never named new");

    std::fs::create_dir(m.path("kept")).expect("mkdir");
    sync_dir(m.fs.mountpoint());
    std::fs::remove_dir(m.path("kept")).expect("rmdir");
    std::fs::create_dir(m.path("volatile")).expect("mkdir");
    m.cut();
    assert!(m.path("kept").is_dir());
    assert!(!m.path("volatile").exists());
}

/// Fails if a hard link or symlink was durable without a directory fsync,
/// or lost with one.
#[test]
fn links_and_symlinks_need_a_dir_fsync() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("f"), b"x");
    std::fs::hard_link(m.path("f"), m.path("hard")).expect("link");
    std::os::unix::fs::symlink("f", m.path("soft")).expect("symlink");
    assert_eq!(std::fs::read(m.path("soft")).expect("follow"), b"x");
    m.cut();
    assert!(!m.path("hard").exists() && std::fs::symlink_metadata(m.path("soft")).is_err());

    std::fs::hard_link(m.path("f"), m.path("hard")).expect("link");
    std::os::unix::fs::symlink("f", m.path("soft")).expect("symlink");
    File::open(m.fs.mountpoint())
        .and_then(|d| d.sync_all())
        .expect("fsyncdir");
    m.cut();
    assert_eq!(std::fs::metadata(m.path("f")).expect("stat").nlink(), 2);
    assert_eq!(
        std::fs::read_link(m.path("soft"))
            .expect("readlink")
            .to_str(),
        Some("f")
    );
}
