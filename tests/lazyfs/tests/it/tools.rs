//! What ordinary programs need besides durability: flock, metadata, statfs,
//! access, shell tools, concurrent writers, and enough fsync throughput.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use crate::fixture::{mount, sync_dir, sync_tree, write_durable};

/// Fails if the kernel's local flock emulation did not work on the mount:
/// sled's `try_lock_exclusive` (flock `LOCK_EX | LOCK_NB`) must exclude a
/// second open of the same file, as it does on a disk.
#[test]
fn flock_is_exclusive_between_open_files() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("lock"), b"");
    let first = File::open(m.path("lock")).expect("open");
    let second = File::open(m.path("lock")).expect("open");
    first.try_lock().expect("first lock");
    assert!(
        second.try_lock().is_err(),
        "a second exclusive lock must fail"
    );
    first.unlock().expect("unlock");
    second.try_lock().expect("lock after unlock");
}

/// Fails if chmod or utimes were durable without an fsync, or lost with one.
#[test]
fn metadata_changes_are_durable_with_fsync() {
    let Some(m) = mount() else { return };
    let path = m.path("f");
    write_durable(&path, b"x");
    let old_mtime = std::fs::metadata(&path)
        .expect("stat")
        .modified()
        .expect("mtime");
    let epoch_plus = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    std::fs::set_permissions(&path, Permissions::from_mode(0o600)).expect("chmod");
    File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(epoch_plus))
        .expect("utimes");
    assert_eq!(
        std::fs::metadata(&path).expect("stat").mode() & 0o777,
        0o600
    );
    m.cut();
    let metadata = std::fs::metadata(&path).expect("stat");
    assert_eq!(metadata.mode() & 0o777, 0o644);
    assert_eq!(metadata.modified().expect("mtime"), old_mtime);

    std::fs::set_permissions(&path, Permissions::from_mode(0o600)).expect("chmod");
    let file = File::options().write(true).open(&path).expect("open");
    file.set_modified(epoch_plus).expect("utimes");
    file.sync_all().expect("fsync");
    drop(file);
    m.cut();
    let metadata = std::fs::metadata(&path).expect("stat");
    assert_eq!(metadata.mode() & 0o777, 0o600);
    assert_eq!(metadata.modified().expect("mtime"), epoch_plus);
}

/// Fails if statfs or access(2) are not answered.
#[test]
fn statfs_and_access_answer() {
    let Some(m) = mount() else { return };
    let stat = nix::sys::statvfs::statvfs(m.fs.mountpoint()).expect("statvfs");
    assert_eq!(
        stat.blocks() * stat.fragment_size(),
        raftlock_lazyfs::CAPACITY_BYTES
    );
    std::fs::write(m.path("f"), vec![1; 10_000]).expect("write");
    let after = nix::sys::statvfs::statvfs(m.fs.mountpoint()).expect("statvfs");
    assert_eq!(
        stat.blocks_free() - after.blocks_free(),
        3,
        "three 4 KiB pages"
    );
    use nix::unistd::{access, AccessFlags};
    access(&m.path("f"), AccessFlags::R_OK | AccessFlags::W_OK).expect("access rw");
    assert!(
        access(&m.path("f"), AccessFlags::X_OK).is_err(),
        "no execute bit"
    );
    assert!(access(&m.path("missing"), AccessFlags::F_OK).is_err());
}

/// Fails if common tools (coreutils through sh) trip over a missing operation.
#[test]
fn shell_tools_work() {
    let Some(m) = mount() else { return };
    let script = "set -e; mkdir -p a/b/c; echo hi > a/b/c/f; cp -r a copy; mv copy moved; \
        ln -s moved/b link; cat link/c/f; ls -la moved > /dev/null; touch -d @1 a/b/c/f; \
        truncate -s 1M big; dd if=/dev/zero of=big bs=4k count=4 conv=notrunc,fsync status=none; \
        rm -r moved; test ! -e moved; find . -type f | sort";
    let output = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(m.fs.mountpoint())
        .output()
        .expect("run sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "sh failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout, "hi\n./a/b/c/f\n./big\n");
    sync_tree(m.fs.mountpoint());
    m.cut();
    assert_eq!(std::fs::read(m.path("a/b/c/f")).expect("read"), b"hi\n");
    assert_eq!(
        std::fs::metadata(m.path("big")).expect("stat").len(),
        1 << 20
    );
}

/// Fails if concurrent writers from several processes interfere: each
/// appends and fsyncs its own file, and every line must arrive, in order.
#[test]
fn concurrent_processes_write_their_own_files() {
    let Some(m) = mount() else { return };
    const WRITERS: usize = 4;
    const LINES: usize = 200;
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            let script = format!(
                "for i in $(seq 1 {LINES}); do echo {w}-$i >> f{w}; done; \
                 dd if=f{w} of=f{w} conv=notrunc,fsync status=none"
            );
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(m.fs.mountpoint())
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success());
    }
    sync_dir(m.fs.mountpoint());
    m.cut();
    for w in 0..WRITERS {
        let content = std::fs::read_to_string(m.path(&format!("f{w}"))).expect("read");
        let expected: String = (1..=LINES).map(|i| format!("{w}-{i}\n")).collect();
        assert_eq!(content, expected, "writer {w}");
    }
}

/// Measures small write + fsync pairs from several threads (printed; run
/// with `--no-capture` to see it). Fails only if the rate is pathological
/// (under 100 per second), which would make crash tests crawl.
#[test]
fn small_fsyncs_are_fast_enough() {
    let Some(m) = mount() else { return };
    const THREADS: usize = 4;
    const ROUNDS: usize = 1_000;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let path = m.path(&format!("t{t}"));
            scope.spawn(move || {
                let mut file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .expect("open");
                for round in 0..ROUNDS {
                    writeln!(file, "{round}").expect("write");
                    file.sync_data().expect("fdatasync");
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let rate = (THREADS * ROUNDS) as f64 / elapsed.as_secs_f64();
    eprintln!(
        "{} write+fdatasync pairs from {THREADS} threads in {elapsed:?}: {rate:.0}/s",
        THREADS * ROUNDS
    );
    assert_eq!(m.fs.stats().fsync_calls, (THREADS * ROUNDS) as u64);
    assert!(rate > 100.0, "{rate:.0} fsyncs per second");
}
