//! The auth file: users, how each proves who it is, and the roles that say
//! what it may touch. Read once at start; a mistake in it stops the node
//! with the key named, never a silently open door.
//!
//! ```toml
//! [roles.jobs]
//! names = ["jobs/*"]            # lock and election names: "prefix*" or exact
//!
//! [[users]]
//! name = "scheduler"
//! token_sha256 = "…"            # `raftlock auth create-token` prints both
//! roles = ["jobs"]
//!
//! [[users]]
//! name = "ops"                  # a client certificate raftlock:client:ops
//! roles = ["admin"]             # built in: every name, operator calls
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use raftlock_raft::error::Source;

use super::policy_error::{AuthFileError, PolicyProblem};

/// The built-in role with every right.
pub const ADMIN_ROLE: &str = "admin";

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    roles: BTreeMap<String, RoleFile>,
    #[serde(default)]
    users: Vec<UserFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleFile {
    /// Lock and election names: `prefix*`, `*`, or an exact name.
    names: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserFile {
    name: String,
    /// Hex SHA-256 of the user's bearer token; absent: certificate only.
    token_sha256: Option<String>,
    roles: Vec<String>,
}

/// Which lock and election names a user may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamePattern {
    /// Names starting with this (`jobs/*`; `*` is the empty prefix).
    Prefix(String),
    /// Exactly this name.
    Exact(String),
}

impl NamePattern {
    fn parse(text: &str) -> Self {
        match text.strip_suffix('*') {
            Some(prefix) => NamePattern::Prefix(prefix.to_string()),
            None => NamePattern::Exact(text.to_string()),
        }
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NamePattern::Prefix(p) => name.starts_with(p.as_str()),
            NamePattern::Exact(n) => name == n,
        }
    }
}

impl std::fmt::Display for NamePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NamePattern::Prefix(p) => write!(f, "{p}*"),
            NamePattern::Exact(n) => f.write_str(n),
        }
    }
}

/// A user's rights, merged over its roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The identity leases are recorded under.
    pub name: String,
    /// Has the admin role.
    pub admin: bool,
    /// Names it may use (every name when `admin`).
    pub names: Vec<NamePattern>,
}

/// The checked auth file.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// By name.
    users: BTreeMap<String, User>,
    /// Token SHA-256 (lowercase hex) → user name.
    tokens: BTreeMap<String, String>,
}

impl Policy {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Policy, AuthFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| AuthFileError::Read {
            path: path.to_path_buf(),
            source: Source::new(e),
        })?;
        Policy::parse(&text).map_err(|problem| AuthFileError::Invalid {
            path: path.to_path_buf(),
            problem,
        })
    }

    /// Checks a file's text: unknown keys, unknown roles, duplicate users
    /// or tokens and malformed hashes are refused.
    pub fn parse(text: &str) -> Result<Policy, PolicyProblem> {
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| PolicyProblem::Toml(Source::new(e)))?;
        if file.roles.contains_key(ADMIN_ROLE) {
            return Err(PolicyProblem::AdminDefined { role: ADMIN_ROLE });
        }
        for (role, r) in &file.roles {
            if r.names.is_empty() {
                let role = role.clone();
                return Err(PolicyProblem::EmptyRole { role });
            }
        }
        let mut policy = Policy::default();
        for u in file.users {
            if u.name.is_empty() {
                return Err(PolicyProblem::EmptyUserName);
            }
            if policy.users.contains_key(&u.name) {
                return Err(PolicyProblem::DuplicateUser { user: u.name });
            }
            if u.roles.is_empty() {
                return Err(PolicyProblem::NoRoles { user: u.name });
            }
            let mut user = User {
                name: u.name.clone(),
                admin: false,
                names: Vec::new(),
            };
            for role in &u.roles {
                if role == ADMIN_ROLE {
                    user.admin = true;
                    continue;
                }
                let r = file
                    .roles
                    .get(role)
                    .ok_or_else(|| PolicyProblem::UnknownRole {
                        user: u.name.clone(),
                        role: role.clone(),
                    })?;
                user.names
                    .extend(r.names.iter().map(|n| NamePattern::parse(n)));
            }
            if let Some(hash) = u.token_sha256 {
                let hash = hash.to_ascii_lowercase();
                if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(PolicyProblem::BadTokenHash { user: u.name });
                }
                if let Some(first) = policy.tokens.insert(hash, u.name.clone()) {
                    let second = u.name;
                    return Err(PolicyProblem::SharedToken { first, second });
                }
            }
            policy.users.insert(u.name, user);
        }
        Ok(policy)
    }

    /// The user whose token this is.
    pub fn user_by_token(&self, token: &str) -> Option<&User> {
        let name = self.tokens.get(&token_sha256(token))?;
        self.users.get(name)
    }

    /// The user a client certificate names.
    pub fn user_by_name(&self, name: &str) -> Option<&User> {
        self.users.get(name)
    }

    /// The user names, for the start-up log.
    pub fn user_names(&self) -> BTreeSet<&str> {
        self.users.keys().map(String::as_str).collect()
    }
}

/// Lowercase hex SHA-256 of a token, as the auth file stores it.
pub fn token_sha256(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
        [roles.jobs]
        names = ["jobs/*", "cron"]

        [[users]]
        name = "scheduler"
        token_sha256 = "TOKEN"
        roles = ["jobs"]

        [[users]]
        name = "ops"
        roles = ["admin"]
    "#;

    fn file() -> String {
        FILE.replace("TOKEN", &token_sha256("s3cret"))
    }

    #[test]
    fn tokens_and_names_find_their_users() {
        let p = Policy::parse(&file()).unwrap();
        let s = p.user_by_token("s3cret").expect("the scheduler's token");
        assert_eq!(s.name, "scheduler");
        assert!(!s.admin);
        assert!(s.names.iter().any(|n| n.matches("jobs/nightly")));
        assert!(s.names.iter().any(|n| n.matches("cron")));
        assert!(!s
            .names
            .iter()
            .any(|n| n.matches("cron2") || n.matches("billing/x")));
        assert!(p.user_by_token("S3cret").is_none());
        assert!(p.user_by_name("ops").unwrap().admin);
        assert!(p.user_by_name("nobody").is_none());
    }

    #[test]
    fn mistakes_are_refused_with_the_key_named() {
        let cases = [
            (file().replace("names = [", "nams = ["), "nams"),
            (
                file().replace("roles = [\"jobs\"]", "roles = [\"job\"]"),
                "\"job\"",
            ),
            (file().replace(&token_sha256("s3cret"), "abc"), "64 hex"),
            (
                format!("{}\n[roles.admin]\nnames = [\"*\"]", file()),
                "built in",
            ),
            (
                file().replace("name = \"ops\"", "name = \"scheduler\""),
                "twice",
            ),
            (
                file().replace("roles = [\"admin\"]", "roles = []"),
                "no roles",
            ),
            (format!("{}\nextra = 1", file()), "extra"),
        ];
        for (text, needle) in cases {
            let err = Policy::parse(&text).expect_err(needle).to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }
}
