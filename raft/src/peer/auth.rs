//! Peer authentication without a CA: a cluster secret that every member
//! holds, and an HMAC-SHA256 under it on every peer message and reply.
//!
//! The secret is 32 random bytes, handed around as a join token
//! (`rlj1-` and 64 hex digits: `raftlock certs create-join-token`). Every
//! member of a new cluster is started with the same token; a joining node
//! is given the cluster's (`raftlock cluster add-learner` prints the
//! command that starts it with it). A node keeps the secret in its data
//! dir (`raftlock.key`, mode 0600), so a restart needs no flag.
//!
//! What a tag covers: which RPC, request or reply, the whole envelope
//! (cluster id, sender, receiver, boot count, incarnation), the sending
//! time, and the payload; a reply's tag also covers its request's tag, so
//! a reply cannot be replayed for another request. A request sent more
//! than [`REPLAY_WINDOW`] away from the receiver's clock is refused, which
//! bounds how long a recorded message can be replayed (Raft itself
//! tolerates duplicated and delayed messages; forwarded writes carry
//! exactly-once ids). With mTLS the certificates authenticate peers and no
//! secret is used; `--insecure` turns both off.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::join_token::{self, BadJoinToken};
use crate::config::Config;
use crate::error::Source;
use crate::pb::Blob;

/// The secret's file in the data dir.
pub const KEY_FILE: &str = "raftlock.key";

/// How far a request's sending time may be from the receiver's clock.
pub const REPLAY_WINDOW: Duration = Duration::from_secs(300);

/// A cluster's peer secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterKey([u8; 32]);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

/// Why a join token or key file cannot be used. No variant holds the
/// token: the words are printed, and the secret never leaves a node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The token given is not a join token.
    #[error(transparent)]
    Token(#[from] BadJoinToken),
    /// The file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: Source },
    /// The file holds no join token.
    #[error("{}: {source}", path.display())]
    BadFile { path: PathBuf, source: BadJoinToken },
    /// The file cannot be written durably.
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: Source },
    /// The token given is not the one the data dir's cluster keeps (in
    /// `kept`).
    #[error(
        "the join token given is not the one of the cluster this data dir belongs to (kept \
         in {}); give that cluster's token, or none",
        kept.display()
    )]
    OtherCluster { kept: PathBuf },
    /// Several nodes, no peer authentication chosen.
    #[error(
        "a cluster of more than one node authenticates its peers: give every member the \
         same join token (--join-token-file FILE, RAFTLOCK_JOIN_TOKEN or --join-token; \
         `raftlock certs create-join-token` makes one, and for a joining node \
         `raftlock cluster add-learner` prints the command with the cluster's), or \
         use TLS (--tls-cert, --tls-key, --tls-ca), or pass --insecure to run without \
         peer authentication"
    )]
    Needed,
}

/// Whether a message is a request or the reply to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Request,
    Reply,
}

impl ClusterKey {
    /// A new random secret (244 bits from the operating system's
    /// generator, through two v4 UUIDs, as `raftlock auth create-token`).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        ClusterKey(bytes)
    }

    /// Reads a join token (`rlj1-` and 64 hex digits).
    pub fn from_token(token: &str) -> Result<Self, KeyError> {
        join_token::parse(token)
            .map(ClusterKey)
            .map_err(KeyError::from)
    }

    /// The secret's bytes, for what is derived from it (the admin
    /// credential).
    pub(crate) fn secret(&self) -> &[u8; 32] {
        &self.0
    }

    /// The join token that carries this secret.
    pub fn to_token(&self) -> String {
        join_token::format(&self.0)
    }

    /// Reads the token in `path` (a token file, or a data dir's key file).
    pub fn read_file(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|e| KeyError::Read {
            path: path.to_path_buf(),
            source: Source::new(e),
        })?;
        join_token::parse(&text)
            .map(ClusterKey)
            .map_err(|source| KeyError::BadFile {
                path: path.to_path_buf(),
                source,
            })
    }

    /// Writes the token to `path` durably, readable by its owner only.
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        let fail = |p: &Path, e: std::io::Error| KeyError::Write {
            path: p.to_path_buf(),
            source: Source::new(e),
        };
        let tmp = path.with_extension("tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| fail(&tmp, e))?;
        file.write_all(format!("{}\n", self.to_token()).as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| fail(&tmp, e))?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(|e| fail(path, e))?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| fail(dir, e))
    }

    /// The tag of `blob` (its `mac` field excluded) as sent on `rpc` in
    /// `direction`; `bound` is the request's tag for a reply, else empty.
    pub fn tag(&self, rpc: &str, direction: Direction, blob: &Blob, bound: &[u8]) -> Vec<u8> {
        self.mac(rpc, direction, blob, bound)
            .finalize()
            .into_bytes()
            .to_vec()
    }

    /// Whether `blob.mac` is the right tag (in constant time).
    pub fn verify(&self, rpc: &str, direction: Direction, blob: &Blob, bound: &[u8]) -> bool {
        self.mac(rpc, direction, blob, bound)
            .verify_slice(&blob.mac)
            .is_ok()
    }

    fn mac(&self, rpc: &str, direction: Direction, blob: &Blob, bound: &[u8]) -> Hmac<Sha256> {
        // Each variable-length field is preceded by its length, so no two
        // messages share an input.
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        let mut field = |bytes: &[u8]| {
            mac.update(&(bytes.len() as u64).to_be_bytes());
            mac.update(bytes);
        };
        field(b"raftlock-peer-v1");
        field(rpc.as_bytes());
        field(match direction {
            Direction::Request => b"request",
            Direction::Reply => b"reply",
        });
        field(blob.cluster_id.as_bytes());
        field(&blob.from.to_be_bytes());
        field(&blob.to.to_be_bytes());
        field(&blob.boot.to_be_bytes());
        field(&blob.incarnation);
        field(&blob.sent_at_ms.to_be_bytes());
        field(bound);
        field(&blob.data);
        mac
    }
}

/// Where a node's secret lives in its data dir.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join(KEY_FILE)
}

/// The secret a node will tag its peer messages with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPlan {
    /// None: peers use mTLS, or `--insecure`.
    Unused,
    /// The one the data dir keeps.
    Stored(ClusterKey),
    /// A new one (given, or made for a one-node cluster), to be written to
    /// the data dir once the node opened it.
    New(ClusterKey),
}

impl KeyPlan {
    /// The key, if any.
    pub fn key(&self) -> Option<&ClusterKey> {
        match self {
            KeyPlan::Unused => None,
            KeyPlan::Stored(key) | KeyPlan::New(key) => Some(key),
        }
    }
}

/// Decides the secret of the node `config` describes, from its settings
/// and its data dir, before the dir is opened: a node of more than one
/// (a member of `--initial-cluster` with others, or `--join`) without
/// mTLS needs a join token on its first start, unless `--insecure`.
pub fn plan_key(config: &Config) -> Result<KeyPlan, KeyError> {
    if config.tls_enabled() || config.insecure {
        return Ok(KeyPlan::Unused);
    }
    let path = key_path(&config.data_dir);
    let stored = match path.exists() {
        true => Some(ClusterKey::read_file(&path)?),
        false => None,
    };
    let given = match (&config.join_token, &config.join_token_file) {
        (Some(token), _) => Some(ClusterKey::from_token(token)?),
        (None, Some(file)) => Some(ClusterKey::read_file(file)?),
        (None, None) => None,
    };
    match (stored, given) {
        (Some(stored), Some(given)) if stored != given => {
            Err(KeyError::OtherCluster { kept: path.clone() })
        }
        (Some(stored), _) => Ok(KeyPlan::Stored(stored)),
        (None, Some(given)) => Ok(KeyPlan::New(given)),
        (None, None) if config.join || config.initial_cluster.len() > 1 => Err(KeyError::Needed),
        (None, None) => Ok(KeyPlan::New(ClusterKey::generate())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob() -> Blob {
        Blob {
            data: b"payload".to_vec(),
            cluster_id: "c".into(),
            from: 1,
            to: 2,
            boot: 3,
            incarnation: vec![7; 16],
            mac: Vec::new(),
            sent_at_ms: 1_000,
        }
    }

    #[test]
    fn a_token_round_trips_and_junk_is_refused() {
        let key = ClusterKey::generate();
        assert_eq!(ClusterKey::from_token(&key.to_token()), Ok(key.clone()));
        assert_ne!(ClusterKey::generate(), key);
        for junk in [
            "",
            "rlj1-",
            "rlj1-zz",
            &key.to_token()[1..],
            &format!("{}0", key.to_token()),
        ] {
            assert!(ClusterKey::from_token(junk).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn a_tag_covers_every_field_the_rpc_and_the_direction() {
        let key = ClusterKey::generate();
        let mut signed = blob();
        signed.mac = key.tag("vote", Direction::Request, &signed, b"");
        assert!(key.verify("vote", Direction::Request, &signed, b""));
        assert!(!ClusterKey::generate().verify("vote", Direction::Request, &signed, b""));
        assert!(!key.verify("append", Direction::Request, &signed, b""));
        assert!(!key.verify("vote", Direction::Reply, &signed, b""));
        assert!(!key.verify("vote", Direction::Request, &signed, b"other request"));
        let changes: [fn(&mut Blob); 7] = [
            |b| b.data.push(0),
            |b| b.cluster_id.push('x'),
            |b| b.from += 1,
            |b| b.to += 1,
            |b| b.boot += 1,
            |b| b.incarnation[0] ^= 1,
            |b| b.sent_at_ms += 1,
        ];
        for change in changes {
            let mut tampered = signed.clone();
            change(&mut tampered);
            assert!(!key.verify("vote", Direction::Request, &tampered, b""));
        }
    }

    #[test]
    fn the_key_file_is_private_and_reads_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = ClusterKey::generate();
        let path = key_path(dir.path());
        key.write_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(ClusterKey::read_file(&path), Ok(key));
    }
}
