//! sled 0.34 on the lazy filesystem. `Db::flush` writes with `pwrite` and
//! then calls `sync_file_range`, which is not an fsync: on power loss the
//! flushed data can be gone. raftlock's storage relies on `flush` alone, so
//! these tests show the bug, and what it takes to close it.
//!
//! sled runs in child processes (this test binary, re-run on the ignored
//! `sled_child` test) because a crash is a killed process: dropping a `Db`
//! in-process would fsync it (sled's `Drop` calls `sync_all`) and hide the bug.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::fixture::{mount, sync_dir, sync_tree};

/// Tells a child process what to do: `"<step> <db path>"`.
const CHILD_ENV: &str = "LAZYFS_SLED_CHILD";
/// The child's test name, for `--exact`.
const CHILD_TEST: &str = "sled_db::sled_child";
/// Prefix of every line a child reports on stdout.
const REPORT: &str = "LAZYFS-CHILD ";
/// Written durably before each test's crash.
const BASELINE: &[u8] = b"baseline";
/// Written by the child that then crashes.
const KEY: &[u8] = b"key";
/// How long a child waits to be killed before it gives up and exits.
const ORPHAN_TIMEOUT: Duration = Duration::from_secs(60);

/// Not a test on its own: the body of the child processes the sled tests
/// spawn. Does nothing unless [`CHILD_ENV`] is set.
#[test]
#[ignore = "helper process; the sled tests spawn it"]
fn sled_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (step, path) = spec.split_once(' ').expect("<step> <path>");
    let path = Path::new(path);
    if step == "try-open" {
        let outcome = match open(path) {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("err {e}"),
        };
        return println!("{REPORT}open={outcome}");
    }
    let db = open(path).expect("open sled");
    match step {
        "baseline" => {
            db.insert(BASELINE, BASELINE).expect("insert");
            db.flush().expect("flush");
            drop(db);
            sync_tree(path);
            sync_dir(path.parent().expect("db has a parent"));
        }
        "insert-flush" => {
            db.insert(KEY, KEY).expect("insert");
            db.flush().expect("flush");
            wait_for_the_crash();
        }
        "insert-flush-fsync" => {
            db.insert(KEY, KEY).expect("insert");
            db.flush().expect("flush");
            std::fs::File::open(path.join("db"))
                .and_then(|f| f.sync_data())
                .expect("fdatasync db");
            sync_dir(path);
            wait_for_the_crash();
        }
        "hold" => wait_for_the_crash(),
        "read" => {
            let has = |key: &[u8]| db.get(key).expect("get").is_some();
            println!("{REPORT}baseline={} key={}", has(BASELINE), has(KEY));
        }
        other => panic!("unknown step {other}"),
    }
}

/// Opens the db the way the tests need: no periodic flusher thread, because
/// it calls `sync_all` every 500 ms and would make the outcome a race.
fn open(path: &Path) -> sled::Result<sled::Db> {
    sled::Config::new().path(path).flush_every_ms(None).open()
}

/// Reports readiness and sleeps until the parent kills this process; exits
/// on its own after [`ORPHAN_TIMEOUT`] so a dead parent leaves nothing behind.
fn wait_for_the_crash() -> ! {
    println!("{REPORT}ready");
    std::thread::sleep(ORPHAN_TIMEOUT);
    eprintln!("sled child: nobody crashed me within {ORPHAN_TIMEOUT:?}; exiting");
    std::process::exit(1)
}

/// Reads a child's report from one line of its stdout. libtest prints
/// `test sled_db::sled_child ... ` before the report, on the same line.
fn report(line: &str) -> Option<&str> {
    line.split_once(REPORT).map(|(_, report)| report)
}

/// Starts a child on `step`, its stdout piped.
fn spawn(step: &str, db: &Path) -> Child {
    let exe = std::env::current_exe().expect("own test binary");
    Command::new(exe)
        .args([
            CHILD_TEST,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{step} {}", db.display()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child")
}

/// Runs a child on `step` to its end and returns its report line.
fn run(step: &str, db: &Path) -> String {
    let output = spawn(step, db).wait_with_output().expect("child output");
    assert!(
        output.status.success(),
        "child {step} failed: {:?}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| report(line).map(str::to_owned))
        .unwrap_or_default()
}

/// Runs a child on `step` until it reports ready, leaving it running.
fn start(step: &str, db: &Path) -> Child {
    let mut child = spawn(step, db);
    let stdout = child.stdout.take().expect("piped stdout");
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| report(&line) == Some("ready"));
    assert!(
        ready,
        "child {step} ended before it was ready: {:?}",
        child.wait()
    );
    child
}

/// Kills a child with SIGKILL, like a crash, and reaps it.
fn crash(mut child: Child) {
    child.kill().expect("kill");
    child.wait().expect("reap");
}

/// Makes `baseline` durable in a new db at `db` and checks it survives a cut.
fn durable_baseline(m: &crate::fixture::Mounted, db: &Path) {
    run("baseline", db);
    m.cut();
    assert_eq!(run("read", db), "baseline=true key=false");
}

/// The bug our product has: fails if sled's flush alone survived the cut.
#[test]
fn sled_flush_without_fsync_is_lost() {
    let Some(m) = mount() else { return };
    let db = m.path("db");
    durable_baseline(&m, &db);
    let writes = m.fs.stats().write_calls;
    crash(start("insert-flush", &db));
    assert!(m.fs.stats().write_calls > writes, "sled's flush did write");
    m.cut();
    assert!(
        m.fs.stats().last_cut_dropped_bytes > 0,
        "and the cut dropped it"
    );
    assert_eq!(
        run("read", &db),
        "baseline=true key=false",
        "the flushed insert is gone"
    );
}

/// The fix: fails if flush plus an fsync of sled's data file (and its
/// directory) did not make the insert durable.
#[test]
fn sled_flush_plus_fsync_survives() {
    let Some(m) = mount() else { return };
    let db = m.path("db");
    durable_baseline(&m, &db);
    crash(start("insert-flush-fsync", &db));
    m.cut();
    assert_eq!(run("read", &db), "baseline=true key=true");
}

/// Fails if sled's exclusive file lock did not hold on the mount (a second
/// process could then open the same db, and tests would corrupt it).
#[test]
fn sled_lock_excludes_a_second_process() {
    let Some(m) = mount() else { return };
    let db = m.path("db");
    let holder = start("hold", &db);
    let second = run("try-open", &db);
    crash(holder);
    assert!(second.starts_with("open=err"), "second open: {second}");
    assert_eq!(
        run("try-open", &db),
        "open=ok",
        "the lock goes with the holder"
    );
}
