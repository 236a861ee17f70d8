//! The admin credential: what a client presents, without an auth file, to
//! make calls that change the cluster or other clients' state (membership,
//! force-release, bulk revoke, backups).
//!
//! It is derived from the cluster secret (`raftlock.key`, the join token)
//! as HMAC-SHA256(secret, [`LABEL`]) and travels as a bearer token,
//! `rla1-` and 64 hex digits. The raw secret never crosses the client
//! port: a credential read off the wire (a client port without TLS) lets
//! its reader make admin calls, but it is not the key that tags peer
//! messages, so it cannot forge Raft traffic, and the secret cannot be
//! computed back from it. The admin CLI on a node's host derives it from
//! the node's key file or a join-token file ([`AdminCredential::read`]).

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::auth::{key_path, ClusterKey, KeyError};

/// What the secret is keyed with, so no other use of it yields the same
/// bytes.
pub const LABEL: &[u8] = b"raftlock-admin-credential-v1";

/// How the credential starts, as a bearer token.
pub const PREFIX: &str = "rla1-";

/// A cluster's admin credential.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminCredential([u8; 32]);

impl std::fmt::Debug for AdminCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminCredential(..)")
    }
}

impl AdminCredential {
    /// The credential of the cluster whose secret is `key`.
    pub fn derive(key: &ClusterKey) -> Self {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.secret())
            .expect("HMAC takes a key of any length");
        mac.update(LABEL);
        AdminCredential(mac.finalize().into_bytes().into())
    }

    /// Reads the cluster secret at `path` and derives the credential:
    /// `path` is a node's data dir (its `raftlock.key`) or a file holding
    /// a join token.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        let file = match path.is_dir() {
            true => key_path(path),
            false => path.to_path_buf(),
        };
        ClusterKey::read_file(&file).map(|key| Self::derive(&key))
    }

    /// The bearer token that carries it.
    pub fn to_bearer(&self) -> String {
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        format!("{PREFIX}{hex}")
    }

    /// Whether `bearer` looks like an admin credential (of any cluster).
    pub fn is_admin_bearer(bearer: &str) -> bool {
        bearer.starts_with(PREFIX)
    }

    /// Whether `bearer` is this credential, compared in constant time.
    pub fn matches(&self, bearer: &str) -> bool {
        let Some(hex) = bearer.trim().strip_prefix(PREFIX) else {
            return false;
        };
        if hex.len() != 64 || !hex.is_ascii() {
            return false;
        }
        let mut diff = 0u8;
        for (i, want) in self.0.iter().enumerate() {
            match u8::from_str_radix(&hex[2 * i..2 * i + 2], 16) {
                Ok(got) => diff |= got ^ want,
                Err(_) => return false,
            }
        }
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_is_not_the_secret_and_matches_only_itself() {
        let key = ClusterKey::generate();
        let credential = AdminCredential::derive(&key);
        let bearer = credential.to_bearer();
        assert!(bearer.starts_with(PREFIX) && bearer.len() == PREFIX.len() + 64);
        assert!(credential.matches(&bearer));
        // Nothing of the secret's text is in it.
        let secret_hex = key.to_token().trim_start_matches("rlj1-").to_string();
        assert!(!bearer.contains(&secret_hex[..16]));
        let other = AdminCredential::derive(&ClusterKey::generate());
        assert!(!other.matches(&bearer));
        for junk in [
            String::new(),
            PREFIX.to_string(),
            key.to_token(),
            bearer[..bearer.len() - 1].to_string(),
            format!("{bearer}0"),
            bearer.replace(PREFIX, "rla2-"),
            format!("{PREFIX}{}", "zz".repeat(32)),
        ] {
            assert!(!credential.matches(&junk), "{junk:?}");
        }
        assert_eq!(format!("{credential:?}"), "AdminCredential(..)");
    }

    #[test]
    fn it_is_read_from_a_data_dir_or_a_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let key = ClusterKey::generate();
        key.write_file(&key_path(dir.path())).unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{}\n", key.to_token())).unwrap();
        let want = AdminCredential::derive(&key);
        assert_eq!(AdminCredential::read(dir.path()), Ok(want.clone()));
        assert_eq!(AdminCredential::read(&token_file), Ok(want));
        let missing = AdminCredential::read(&dir.path().join("nothing")).unwrap_err();
        assert!(matches!(missing, KeyError::Read { .. }), "{missing}");
        assert!(missing.to_string().contains("cannot read"), "{missing}");
    }
}
