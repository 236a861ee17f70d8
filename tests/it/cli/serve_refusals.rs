//! What a real `raftlock serve` says when it refuses something: a data
//! dir another process has open (it does not start, names the holder's
//! pid and writes nothing), and a certificate outside its validity on
//! either listener (a WARN naming the listener, the peer's address, the
//! certificate's subject and the problem).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use time::OffsetDateTime;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use super::{describe, serve_command, terminate, wait_exit, BIN};

/// A `raftlock serve` process and the lines of its stderr.
pub(super) struct Serve {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// Every line read so far, for failure messages.
    seen: Vec<String>,
    pub(super) client_addr: String,
    pub(super) peer_addr: String,
}

impl Serve {
    /// Starts `raftlock serve` on free loopback ports with `args`
    /// (no admin listener) and waits until it serves clients.
    pub(super) async fn start(args: &[&str]) -> Serve {
        let mut serve = Serve::spawn(args, "off");
        serve.wait_for(&["serving clients on"]).await;
        serve
    }

    /// Starts `raftlock serve` on free loopback ports with `args` and
    /// its admin listener at `admin` ("off": none), without waiting.
    pub(super) fn spawn(args: &[&str], admin: &str) -> Serve {
        let (client_addr, peer_addr) = (free_addr(), free_addr());
        let mut child = serve_command()
            .args(["--client-addr", &client_addr, "--peer-addr", &peer_addr])
            .args(["--admin-addr", admin])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn raftlock serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stderr = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = stderr.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Serve {
            child,
            lines,
            seen: Vec::new(),
            client_addr,
            peer_addr,
        }
    }

    /// The next stderr line holding every one of `needles`, within 20 s.
    pub(super) async fn wait_for(&mut self, needles: &[&str]) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no line with {needles:?} within 20 s; stderr:\n{}",
                        self.seen.join("\n")
                    )
                })
                .unwrap_or_else(|| {
                    panic!(
                        "stderr closed before a line with {needles:?}:\n{}",
                        self.seen.join("\n")
                    )
                });
            self.seen.push(line.clone());
            if needles.iter().all(|n| line.contains(n)) {
                return line;
            }
        }
    }

    /// The process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id().expect("raftlock serve is running")
    }

    pub(super) async fn stop(mut self) {
        terminate(&self.child);
        let status = wait_exit(&mut self.child, Duration::from_secs(20)).await;
        assert!(status.success(), "{status}");
    }
}

use super::free_addr;

/// Every file under `dir` with its bytes and modification time.
pub(super) fn files(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut found = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            let meta = std::fs::metadata(&path).expect("stat");
            if meta.is_dir() {
                todo.push(path.clone());
            }
            let bytes = if meta.is_file() {
                std::fs::read(&path).expect("read")
            } else {
                Vec::new()
            };
            found.insert(path, (bytes, meta.modified().expect("mtime")));
        }
    }
    found
}

/// Sends SIGSTOP / SIGCONT.
pub(super) fn signal(pid: u32, name: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -{name} {pid}");
}

/// Waits until every thread of `pid` is stopped: `kill -STOP` returns
/// once the signal is queued, and a thread running on another core can
/// still finish a write after that (CI saw a file change between the
/// two listings before this wait).
pub(super) async fn wait_stopped(pid: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("list threads");
        let all_stopped = tasks.flatten().all(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // The state is the field after the parenthesised name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('T') || state.is_empty()
        });
        if all_stopped {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pid {pid} did not stop within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Two servers on one data dir (other ports): the second refuses to start,
/// names the dir and the first one's pid, and writes nothing there. The
/// first is stopped (SIGSTOP, its lock still held) while the second runs,
/// so nothing else changes the dir. Before the check it printed sled's
/// `Io error: could not acquire lock on ".../db": ... WouldBlock`, and
/// the assertion on the message failed (seen).
#[tokio::test]
async fn cli_serve_refuses_a_data_dir_another_process_has_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("n1");
    let data_arg = data.display().to_string();
    let first = Serve::start(&["--data-dir", &data_arg]).await;
    let pid = first.child.id().expect("running");
    signal(pid, "STOP");
    wait_stopped(pid).await;
    let before = files(&data);
    let second = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN)
            .arg("serve")
            .args(["--data-dir", &data_arg, "--admin-addr", "off"])
            .args(["--client-addr", &free_addr(), "--peer-addr", &free_addr()])
            .env_remove("RAFTLOCK_LOG")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("the second server gives up within 30 s")
    .expect("run raftlock serve");
    let after = files(&data);
    signal(pid, "CONT");

    assert!(!second.status.success(), "{}", describe(&second));
    let said = String::from_utf8_lossy(&second.stderr);
    let expected =
        format!("data dir {data_arg} is in use by another process (pid {pid}, raftlock)");
    assert!(said.contains(&expected), "{expected:?} not in: {said}");
    assert!(said.contains("stop that process first"), "{said}");
    assert!(!said.contains("WouldBlock"), "{said}");
    let changed: Vec<_> = after
        .iter()
        .filter(|(path, seen)| before.get(*path) != Some(seen))
        .map(|(path, _)| path.display().to_string())
        .chain(
            before
                .keys()
                .filter(|p| !after.contains_key(*p))
                .map(|p| p.display().to_string()),
        )
        .collect();
    assert!(
        changed.is_empty(),
        "the refused server changed the data dir: {changed:?}"
    );
    first.stop().await;
}

/// A certificate signed by `certs`' CA for `name` (common name) with
/// `san`, for `usage`, valid from `from` until `until`.
fn issue(
    certs: &Path,
    name: &str,
    san: SanType,
    usage: Vec<ExtendedKeyUsagePurpose>,
    from: OffsetDateTime,
    until: OffsetDateTime,
) -> Identity {
    let read = |file: &str| std::fs::read_to_string(certs.join(file)).expect("read CA file");
    let ca_key = KeyPair::from_pem(&read("ca.key")).expect("CA key");
    let issuer = Issuer::from_ca_cert_pem(&read("ca.crt"), ca_key).expect("CA");
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "raftlock");
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.subject_alt_names = vec![san];
    params.extended_key_usages = usage;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = true;
    params.not_before = from;
    params.not_after = until;
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("sign");
    Identity::from_pem(cert.pem(), key.serialize_pem())
}

/// One call to `addr` over TLS as `identity`; the handshake is what
/// matters, so the call and its answer do not.
async fn dial(addr: &str, certs: &Path, identity: Identity) {
    let ca = std::fs::read(certs.join("ca.crt")).expect("read ca.crt");
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca))
        .domain_name("node-1.raftlock")
        .identity(identity);
    let answer = crate::tls::identify_over_tls(addr, tls).await;
    assert!(answer.is_err(), "a refused certificate got an answer");
}

/// A TLS node logs a WARN for a client certificate that expired, one not
/// valid yet, and a peer's node certificate that expired: the listener,
/// the peer's address, the subject, the problem and the next step. With
/// tonic's own handshake (before `tls_acceptor`) nothing above DEBUG was
/// logged and each `wait_for` timed out (seen).
#[tokio::test]
async fn cli_serve_warns_of_certificates_outside_their_validity() {
    let dir = tempfile::tempdir().expect("temp dir");
    let certs = dir.path().join("certs");
    raftlock_cli::certs::create_ca(&certs, false).expect("CA");
    raftlock_cli::certs::create_node(&certs, None, 1, &["127.0.0.1".into()], false)
        .expect("node 1");
    let now = OffsetDateTime::now_utc();
    let day = time::Duration::days(1);
    let client = |name: &str, from, until| {
        let uri = format!("raftlock:client:{name}").try_into().expect("URI");
        let usage = vec![ExtendedKeyUsagePurpose::ClientAuth];
        issue(&certs, name, SanType::URI(uri), usage, from, until)
    };
    let expired = client("late", now - 30 * day, now - day);
    let not_yet = client("early", now + day, now + 30 * day);
    let node2 = issue(
        &certs,
        "node-2",
        SanType::DnsName("node-2.raftlock".try_into().expect("DNS name")),
        vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
        now - 30 * day,
        now - day,
    );

    let file = |name: &str| certs.join(name).display().to_string();
    let mut serve = Serve::start(&[
        "--data-dir",
        &dir.path().join("n1").display().to_string(),
        "--tls-cert",
        &file("node-1.crt"),
        "--tls-key",
        &file("node-1.key"),
        "--tls-ca",
        &file("ca.crt"),
    ])
    .await;
    let (client_addr, peer_addr) = (serve.client_addr.clone(), serve.peer_addr.clone());

    dial(&client_addr, &certs, expired).await;
    let line = serve
        .wait_for(&[
            "WARN",
            "client listener refused a TLS connection from 127.0.0.1:",
        ])
        .await;
    for said in ["CN=late", "has expired", "raftlock certs create-client"] {
        assert!(line.contains(said), "{said:?} not in {line}");
    }

    dial(&client_addr, &certs, not_yet).await;
    let line = serve.wait_for(&["WARN", "CN=early"]).await;
    assert!(line.contains("is not valid yet"), "{line}");
    assert!(line.contains("check the clocks"), "{line}");

    dial(&peer_addr, &certs, node2).await;
    let line = serve
        .wait_for(&[
            "WARN",
            "peer listener refused a TLS connection from 127.0.0.1:",
        ])
        .await;
    for said in ["CN=node-2", "has expired", "raftlock certs create-node"] {
        assert!(line.contains(said), "{said:?} not in {line}");
    }
    serve.stop().await;
}
