//! Cut points: the power goes at the Nth operation of a kind on a path,
//! the process doing it is held until it is killed, and the cut keeps
//! exactly the state at that operation.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use raftlock_lazyfs::{CutPoint, Fired, Op, When};

use crate::fixture::{mount, sync_dir, write_durable, Mounted};

/// How long a test waits for a point to fire or a killed child to exit.
const PATIENCE: Duration = Duration::from_secs(60);

/// Runs `script` with `sh` in the mount's root.
fn shell(m: &Mounted, script: &str) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(m.fs.mountpoint())
        .spawn()
        .expect("spawn sh")
}

/// Waits for the armed point to fire.
fn wait_fired(m: &Mounted) -> Fired {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(fired) = m.fs.fired() {
            return fired;
        }
        assert!(Instant::now() < deadline, "the cut point never fired");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// kill -9 `child` and waits for it: a held caller must be let go once
/// it is being killed.
fn kill(mut child: Child) {
    child.kill().expect("kill");
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the killed child never exited");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The point fires on the second create under `/d/`, after applying it,
/// and the power stays off: the script's third create never happens
/// while the child is held. After the kill and the cut, the durable state
/// is the one at the second create: the first file, made durable before,
/// is there; the second (its name never synced) is not.
///
/// Without the cut point (`LazyFilesystem::change` applying every
/// operation), nothing fires and the script creates all three files.
#[test]
fn the_nth_create_fires_and_holds_the_caller() {
    let Some(m) = mount() else { return };
    std::fs::create_dir(m.path("d")).expect("mkdir");
    sync_dir(m.fs.mountpoint());
    m.fs.arm(CutPoint {
        op: Op::Create,
        path: "/d/".into(),
        nth: 2,
        then: 0,
        when: When::After,
    });
    let child = shell(
        &m,
        "echo a > d/a && sync d/a && sync d && echo b > d/b && echo c > d/c; sleep 600",
    );
    let fired = wait_fired(&m);
    assert_eq!(fired.point.op, Op::Create);
    assert_eq!(fired.path, std::path::Path::new("/d/b"));
    // The held create keeps `d` locked in the kernel: look only after the kill.
    std::thread::sleep(Duration::from_millis(200));
    kill(child);
    assert!(m.path("d/b").exists(), "applied before the cut");
    assert!(
        !m.path("d/c").exists(),
        "nothing changes once the power is off"
    );
    m.cut();
    assert!(!m.path("d/b").exists(), "its name was never synced");
    assert!(m.path("d/a").exists(), "made durable before the cut point");
}

/// A cut right before a remove: the file stays, in both views.
///
/// Without the cut point the `rm` removes it.
#[test]
fn a_cut_before_a_remove_keeps_the_file() {
    let Some(m) = mount() else { return };
    write_durable(&m.path("seg"), b"kept");
    m.fs.arm(CutPoint {
        op: Op::Remove,
        path: "seg".into(),
        nth: 1,
        then: 0,
        when: When::Before,
    });
    let child = shell(&m, "rm seg; sleep 600");
    let fired = wait_fired(&m);
    assert_eq!(
        fired.to_string(),
        "before Remove of /seg (Remove #1 on seg, then 0)"
    );
    kill(child);
    assert!(m.path("seg").exists(), "not applied");
    m.cut();
    assert_eq!(std::fs::read(m.path("seg")).expect("read"), b"kept");
    // The power is back: changes apply again.
    std::fs::remove_file(m.path("seg")).expect("remove after the cut");
}
