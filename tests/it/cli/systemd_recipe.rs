//! The install steps at the top of `cluster-scripts/systemd/raftlock.service`
//! as typed, as root, with every absolute path moved under a temp dir and
//! the config edited as the steps say (addresses, members, the data dir);
//! then the unit's `ExecStart=` run as its `User=`/`Group=` (with
//! `setpriv`, as systemd would), which must read the join token and serve.
//!
//! Before, the steps left the join token root-owned with mode 0600 and
//! the node, running as `raftlock`, stopped at start with "Permission
//! denied"; this test failed at "serves as raftlock" with that message.
//!
//! Needs root (to install files for another user, and to add the user
//! when it does not exist; a user it added is removed at the end). Without root it is skipped with the reason
//! printed; under CI (`CI` set) it fails instead.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::BIN;

const UNIT: &str = include_str!("../../../cluster-scripts/systemd/raftlock.service");

/// The shell steps of the unit's header: its `#   ` lines.
fn recipe() -> Vec<String> {
    UNIT.lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .map(str::to_owned)
        .collect()
}

/// The value of `key=` in the unit.
fn unit_setting(key: &str) -> String {
    UNIT.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("the unit has no {key}="))
        .to_owned()
}

fn sh(line: &str, cwd: &Path, path: &str) -> std::process::Output {
    Command::new("sh")
        .args(["-c", line])
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("RAFTLOCK_LOG")
        .output()
        .expect("run sh")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> String {
    super::free_addr()
}

#[test]
fn systemd_recipe_as_typed_lets_the_unit_user_read_the_join_token() {
    let test = "systemd_recipe_as_typed_lets_the_unit_user_read_the_join_token";
    if !is_root() {
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        assert!(!ci, "{test}: needs root, which CI has");
        eprintln!("SKIPPED {test}: needs root (to install files for the unit's user)");
        return;
    }
    let user = unit_setting("User");
    let group = unit_setting("Group");
    let root = tempfile::tempdir().expect("temp dir");
    let top = root.path();
    // The unit's user must reach the files below, as under / it would.
    std::fs::set_permissions(top, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    for dir in ["usr/local/bin", "etc/systemd/system", "work"] {
        std::fs::create_dir_all(top.join(dir)).expect("mkdir");
    }
    let repo = crate::repo_root();
    let repo = repo.display();
    let moved = |line: &str| {
        line.replace(
            "/usr/local/bin",
            &format!("{}/usr/local/bin", top.display()),
        )
        .replace("/etc/", &format!("{}/etc/", top.display()))
        .replace("target/release/raftlock", BIN)
        .replace("cluster-scripts/", &format!("{repo}/cluster-scripts/"))
    };
    let path = format!(
        "{}/usr/local/bin:{}",
        top.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let work = top.join("work");
    let mut created_user = false;
    for line in recipe() {
        if line.starts_with("systemctl") {
            continue; // no systemd here: ExecStart is run by hand below
        }
        if line.starts_with("useradd") {
            if Command::new("id")
                .arg(&user)
                .output()
                .is_ok_and(|o| o.status.success())
            {
                continue;
            }
            created_user = true;
        }
        let out = sh(&moved(&line), &work, &path);
        assert!(
            out.status.success(),
            "step {line:?}: {}",
            super::describe(&out)
        );
    }

    // "then edit id, addresses, members": a one-node cluster on loopback
    // (which still reads join_token_file), its data dir made for the user
    // as StateDirectory= makes it.
    let config_path = top.join("etc/raftlock/raftlock.toml");
    let text = std::fs::read_to_string(&config_path).expect("installed config");
    let mut config: toml::Table = text.parse().expect("config parses");
    let (client, peer) = (free_port(), free_port());
    let data_dir = top.join("var/lib/raftlock");
    config.insert("client_addr".into(), client.clone().into());
    config.insert("peer_addr".into(), peer.clone().into());
    config.insert("admin_addr".into(), "off".into());
    config.insert("data_dir".into(), data_dir.display().to_string().into());
    config.insert(
        "initial_cluster".into(),
        toml::Value::Array(vec![format!("1={peer}/{client}").into()]),
    );
    let token_file = config
        .get("join_token_file")
        .and_then(|v| v.as_str())
        .expect("the config names a join token file")
        .to_owned();
    config.insert("join_token_file".into(), moved(&token_file).into());
    std::fs::write(&config_path, config.to_string()).expect("edit config");
    let made = sh(
        &format!(
            "install -d -o {user} -g {group} -m 0700 {}",
            data_dir.display()
        ),
        &work,
        &path,
    );
    assert!(made.status.success(), "{}", super::describe(&made));

    let exec = moved(&unit_setting("ExecStart"));
    let mut serve = Command::new("setpriv")
        .args([
            &format!("--reuid={user}"),
            &format!("--regid={group}"),
            "--init-groups",
            "--",
        ])
        .args(exec.split_whitespace())
        .current_dir(top)
        .env_remove("RAFTLOCK_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(top.join("serve.log")).expect("log"),
        ))
        .spawn()
        .expect("run setpriv");
    let log = || std::fs::read_to_string(top.join("serve.log")).unwrap_or_default();
    let started = Instant::now();
    let outcome = loop {
        if log().contains("serving clients") {
            break Ok(());
        }
        if let Some(exit) = serve.try_wait().expect("wait") {
            break Err(format!("exited {exit}"));
        }
        if started.elapsed() > Duration::from_secs(60) {
            break Err("not serving after 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = serve.kill();
    let _ = serve.wait();
    if created_user {
        let _ = Command::new("userdel").arg(&user).status();
    }
    if let Err(why) = outcome {
        panic!("serves as {user}: {why}: {}", log());
    }
}
