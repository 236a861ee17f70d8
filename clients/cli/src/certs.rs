//! A cluster's certificates, made the way `cockroach cert` makes them: one
//! CA, a certificate per node that names the node, a certificate per
//! client that names the client. `raftlock certs` calls these; tests call
//! them too.
//!
//! # Files in a certs dir
//!
//! | file | what |
//! | --- | --- |
//! | `ca.crt`, `ca.key` | the cluster CA (10 years); keep `ca.key` off the nodes if you can |
//! | `node-N.crt`, `node-N.key` | node N (5 years): DNS name `node-N.raftlock` plus the given hosts; server and client use |
//! | `client-NAME.crt`, `client-NAME.key` | client NAME (5 years): common name `NAME`, URI `raftlock:client:NAME`; client use only |
//!
//! Keys are ECDSA P-256 in PKCS#8 PEM, written with mode 0600. An existing
//! file is never replaced unless `overwrite` is set.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, UnixTime};
use time::{Duration, OffsetDateTime};

use raftlock_raft::transport::tls::{client_uri, node_dns_name, node_id_of_dns_name};

use raftlock_client::Error;

/// How long the CA is valid.
const CA_DAYS: i64 = 3650;
/// How long node and client certificates are valid.
const LEAF_DAYS: i64 = 1825;
/// Longest client name.
const MAX_CLIENT_NAME: usize = 64;

/// The CA certificate's file name in a certs dir.
pub const CA_CERT: &str = "ca.crt";
/// The CA key's file name in a certs dir.
pub const CA_KEY: &str = "ca.key";

/// The certificate and key file of node `id` in `dir`.
pub fn node_files(dir: &Path, id: u64) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("node-{id}.crt")),
        dir.join(format!("node-{id}.key")),
    )
}

/// The certificate and key file of client `name` in `dir`.
pub fn client_files(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("client-{name}.crt")),
        dir.join(format!("client-{name}.key")),
    )
}

/// Creates `dir` if need be and writes a new CA to `ca.crt` and `ca.key`.
/// Returns the files written.
pub fn create_ca(dir: &Path, overwrite: bool) -> Result<Vec<PathBuf>, Error> {
    let (cert, key) = (dir.join(CA_CERT), dir.join(CA_KEY));
    prepare(dir, &[&cert, &key], overwrite)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name("raftlock CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, CA_DAYS);
    let key_pair = KeyPair::generate().map_err(|e| rcgen_error("generate the CA key", e))?;
    let ca = params
        .self_signed(&key_pair)
        .map_err(|e| rcgen_error("sign the CA certificate", e))?;
    write(&key, key_pair.serialize_pem().as_bytes(), true)?;
    write(&cert, ca.pem().as_bytes(), false)?;
    Ok(vec![cert, key])
}

/// Writes `node-ID.crt` and `node-ID.key` to `dir`, signed by the CA in
/// `dir/ca.crt` and `ca_key` (default `dir/ca.key`). `hosts` are the names
/// and addresses clients and peers dial the node by; `node-ID.raftlock` is
/// always added.
pub fn create_node(
    dir: &Path,
    ca_key: Option<&Path>,
    id: u64,
    hosts: &[String],
    overwrite: bool,
) -> Result<Vec<PathBuf>, Error> {
    if id == 0 {
        return Err(Error::InvalidArgument("node id must be at least 1".into()));
    }
    if hosts.is_empty() {
        return Err(Error::InvalidArgument(
            "give at least one --host the node is reached by (e.g. --host 127.0.0.1 --host localhost)"
                .into(),
        ));
    }
    let mut sans = vec![dns_san(&node_dns_name(id))?];
    for host in hosts {
        let host = host.trim();
        if host.is_empty() {
            return Err(Error::InvalidArgument("empty --host".into()));
        }
        if node_id_of_dns_name(host).is_some() {
            return Err(Error::InvalidArgument(format!(
                "--host {host} is a node name; node-{id}.raftlock is added by itself and a \
                 certificate must not name another node"
            )));
        }
        sans.push(match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => dns_san(host)?,
        });
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&format!("node-{id}"));
    params.subject_alt_names = sans;
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let (cert, key) = node_files(dir, id);
    issue(dir, ca_key, params, &cert, &key, overwrite)?;
    Ok(vec![cert, key])
}

/// Writes `client-NAME.crt` and `client-NAME.key` to `dir`, signed by the
/// CA in `dir/ca.crt` and `ca_key` (default `dir/ca.key`). The certificate
/// names the client in its common name and as the URI
/// `raftlock:client:NAME`.
pub fn create_client(
    dir: &Path,
    ca_key: Option<&Path>,
    client: &str,
    overwrite: bool,
) -> Result<Vec<PathBuf>, Error> {
    check_client_name(client)?;
    let uri = client_uri(client)
        .try_into()
        .map_err(|e| Error::InvalidArgument(format!("client name {client:?}: {e}")))?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(client);
    params.subject_alt_names = vec![SanType::URI(uri)];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let (cert, key) = client_files(dir, client);
    issue(dir, ca_key, params, &cert, &key, overwrite)?;
    Ok(vec![cert, key])
}

/// Client names: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.` or
/// `-`, so they are safe in a file name and a URI.
fn check_client_name(client: &str) -> Result<(), Error> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let ok = !client.is_empty()
        && client.len() <= MAX_CLIENT_NAME
        && client.chars().all(ok_char)
        && !client.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "client name {client:?}: use 1 to {MAX_CLIENT_NAME} letters, digits, '.', '_' or \
             '-', not starting with '.' or '-'"
        )))
    }
}

/// Signs `params` with the CA and writes the certificate and a new key,
/// after checking that the result verifies against `ca.crt`.
fn issue(
    dir: &Path,
    ca_key: Option<&Path>,
    mut params: CertificateParams,
    cert: &Path,
    key: &Path,
    overwrite: bool,
) -> Result<(), Error> {
    let ca_cert_path = dir.join(CA_CERT);
    let ca_key_path = ca_key.map_or_else(|| dir.join(CA_KEY), Path::to_path_buf);
    prepare(dir, &[cert, key], overwrite)?;
    let ca_pem = read_text(&ca_cert_path, "the CA certificate")?;
    let ca_key_pem = read_text(&ca_key_path, "the CA key")?;
    let ca_key_pair = KeyPair::from_pem(&ca_key_pem).map_err(|e| {
        Error::Tls(format!(
            "{}: not a usable private key: {e}",
            ca_key_path.display()
        ))
    })?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key_pair).map_err(|e| {
        Error::Tls(format!(
            "{}: not a usable CA certificate: {e}",
            ca_cert_path.display()
        ))
    })?;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_DAYS);
    let key_pair = KeyPair::generate().map_err(|e| rcgen_error("generate a key", e))?;
    let signed = params
        .signed_by(&key_pair, &issuer)
        .map_err(|e| rcgen_error("sign the certificate", e))?;
    verify_against_ca(signed.der(), ca_pem.as_bytes()).map_err(|e| {
        Error::Tls(format!(
            "the CA key {} does not belong to {} (a certificate it signed does not verify: {e})",
            ca_key_path.display(),
            ca_cert_path.display()
        ))
    })?;
    write(key, key_pair.serialize_pem().as_bytes(), true)?;
    write(cert, signed.pem().as_bytes(), false)?;
    Ok(())
}

/// Checks that `cert` chains to the CA certificate in `ca_pem`.
fn verify_against_ca(cert: &CertificateDer<'_>, ca_pem: &[u8]) -> Result<(), String> {
    let ca = CertificateDer::from_pem_slice(ca_pem).map_err(|e| e.to_string())?;
    let anchor = webpki::anchor_from_trusted_cert(&ca).map_err(|e| e.to_string())?;
    let cert = webpki::EndEntityCert::try_from(cert).map_err(|e| e.to_string())?;
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        UnixTime::now(),
        webpki::KeyUsage::client_auth(),
        None,
        None,
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "raftlock");
    dn.push(DnType::CommonName, common_name);
    dn
}

fn dns_san(host: &str) -> Result<SanType, Error> {
    let bad = |e: String| Error::InvalidArgument(format!("--host {host:?} is not a DNS name: {e}"));
    rustls_pki_types::DnsName::try_from(host).map_err(|e| bad(e.to_string()))?;
    host.try_into()
        .map(SanType::DnsName)
        .map_err(|e: rcgen::Error| bad(e.to_string()))
}

/// Valid from an hour ago (clocks differ) for `days`.
fn set_validity(params: &mut CertificateParams, days: i64) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(days);
}

fn rcgen_error(what: &str, e: rcgen::Error) -> Error {
    Error::Tls(format!("cannot {what}: {e}"))
}

/// Creates `dir` and refuses, before anything is written, if one of
/// `files` exists and `overwrite` is not set.
fn prepare(dir: &Path, files: &[&Path], overwrite: bool) -> Result<(), Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Tls(format!("cannot create {}: {e}", dir.display())))?;
    for file in files {
        if file.exists() {
            if !overwrite {
                return Err(Error::Tls(format!(
                    "{} exists; pass --overwrite to replace it",
                    file.display()
                )));
            }
            std::fs::remove_file(file)
                .map_err(|e| Error::Tls(format!("cannot remove {}: {e}", file.display())))?;
        }
    }
    Ok(())
}

fn read_text(path: &Path, what: &str) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::Tls(format!(
            "cannot read {what} {}: {e} (create it with `raftlock certs create-ca`)",
            path.display()
        ))
    })
}

/// Writes a new file; a key is readable by its owner only.
fn write(path: &Path, contents: &[u8], secret: bool) -> Result<(), Error> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = secret;
    options
        .open(path)
        .and_then(|mut f| f.write_all(contents).and_then(|()| f.sync_all()))
        .map_err(|e| Error::Tls(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names_are_checked() {
        for good in ["root", "app-1", "jobs.runner", "A_b"] {
            assert!(check_client_name(good).is_ok(), "{good}");
        }
        let long = "x".repeat(MAX_CLIENT_NAME + 1);
        for bad in ["", "-x", ".x", "a/b", "a b", "ä", long.as_str()] {
            assert!(check_client_name(bad).is_err(), "{bad:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn keys_are_private_and_nothing_is_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        create_ca(d, false).unwrap();
        create_node(d, None, 2, &["127.0.0.1".into(), "localhost".into()], false).unwrap();
        create_client(d, None, "ops", false).unwrap();
        for key in ["ca.key", "node-2.key", "client-ops.key"] {
            let mode = std::fs::metadata(d.join(key)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{key}");
        }
        let before = std::fs::read(d.join("node-2.crt")).unwrap();
        let e = create_node(d, None, 2, &["localhost".into()], false).unwrap_err();
        assert!(e.to_string().contains("--overwrite"), "{e}");
        assert_eq!(std::fs::read(d.join("node-2.crt")).unwrap(), before);
        create_node(d, None, 2, &["localhost".into()], true).unwrap();
        assert_ne!(std::fs::read(d.join("node-2.crt")).unwrap(), before);
        assert!(create_ca(d, false).is_err());
    }

    #[test]
    fn certificates_name_their_node_or_client() {
        use raftlock_raft::transport::tls::{cert_identity, CertIdentity};
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        create_ca(d, false).unwrap();
        create_node(d, None, 3, &["10.0.0.3".into()], false).unwrap();
        create_client(d, None, "ops", false).unwrap();
        let der = |file: &str| {
            CertificateDer::from_pem_slice(&std::fs::read(d.join(file)).unwrap()).unwrap()
        };
        assert_eq!(
            cert_identity(&der("node-3.crt")),
            Some(CertIdentity::Node(3))
        );
        assert_eq!(
            cert_identity(&der("client-ops.crt")),
            Some(CertIdentity::Client("ops".into()))
        );
        assert_eq!(cert_identity(&der("ca.crt")), None);
    }

    #[test]
    fn bad_input_and_a_foreign_ca_key_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let d = dir.path();
        let e = create_node(d, None, 1, &["localhost".into()], false).unwrap_err();
        assert!(e.to_string().contains("create-ca"), "{e}");
        create_ca(d, false).unwrap();
        create_ca(other.path(), false).unwrap();
        let hosts = ["localhost".to_string()];
        assert!(create_node(d, None, 0, &hosts, false).is_err());
        assert!(create_node(d, None, 1, &[], false).is_err());
        assert!(create_node(d, None, 1, &["node-2.raftlock".into()], false).is_err());
        assert!(create_node(d, None, 1, &["bad host".into()], false).is_err());
        let e = create_node(d, Some(&other.path().join(CA_KEY)), 1, &hosts, false).unwrap_err();
        assert!(e.to_string().contains("does not belong"), "{e}");
        assert!(!d.join("node-1.crt").exists() && !d.join("node-1.key").exists());
    }
}
