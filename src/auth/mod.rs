//! Client authentication and authorisation at the client listener.
//!
//! A call proves who it is with a bearer token (`authorization: Bearer
//! TOKEN` metadata) or a client certificate (`raftlock:client:NAME`, or a
//! node's own `node-N.raftlock`); the auth file ([`policy`]) maps it to a
//! user and its roles. [`Auth::authenticate`] answers a [`Principal`],
//! which checks what needs no state: lock and election names against the
//! user's patterns, operator calls against the admin role. What needs the
//! state — whose lease a call acts through — the state machine checks at
//! apply, from the [`Caller`] every write carries.
//!
//! Without an auth file every call is an unchecked principal with no
//! identity: the one-command loopback default. Its writes carry the source
//! address the call came from, which its quotas and exactly-once sessions
//! are kept by ([`Account`]). Operator calls (membership, force-release,
//! bulk revoke, backups) still need an admin proof, whatever the auth
//! file says ([`AdminGate`]): the cluster's admin credential (derived from
//! its secret, [`AdminCredential`]) as a bearer token, or a node
//! certificate; under `--insecure` they are open to all.

pub mod policy;
pub mod policy_error;

use std::sync::Arc;

use raftlock_raft::peer::admin_credential::AdminCredential;
use raftlock_raft::transport::tls::{cert_identity, node_dns_name, CertIdentity};
use raftlock_storage::{Account, Caller};
use tonic::{Request, Status};

use policy::{NamePattern, Policy, User};

/// Metadata key carrying the bearer token.
pub const AUTHORIZATION_KEY: &str = "authorization";

/// The identity a caller with the cluster's admin credential has, on a
/// node with an auth file (leases it grants are recorded under it).
pub const ADMIN_CREDENTIAL_IDENTITY: &str = "raftlock:admin";

/// What proves a caller may make operator calls, besides an admin user of
/// the auth file.
#[derive(Debug, Clone)]
pub enum AdminGate {
    /// A node certificate, or the admin credential when the cluster has a
    /// secret (`None`: peers use mTLS, so a node certificate only).
    Credential(Option<AdminCredential>),
    /// Anyone: the cluster runs with `--insecure`, where anyone who
    /// reaches the peer port can rewrite every lock anyway (announced).
    Open,
}

impl Default for AdminGate {
    /// Nobody but a node certificate's holder.
    fn default() -> Self {
        AdminGate::Credential(None)
    }
}

/// The node's authentication settings; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    /// `None`: authentication off.
    policy: Option<Arc<Policy>>,
    /// Who may make operator calls beyond the auth file's admins.
    admin: AdminGate,
}

impl Auth {
    /// Authentication by `policy`, or none; operator calls gated by `admin`.
    pub fn new(policy: Option<Policy>, admin: AdminGate) -> Self {
        Auth {
            policy: policy.map(Arc::new),
            admin,
        }
    }

    /// Whether calls must authenticate.
    pub fn enabled(&self) -> bool {
        self.policy.is_some()
    }

    /// Who sent `req`: UNAUTHENTICATED when authentication is on and the
    /// call proves no known identity.
    pub fn authenticate<T>(&self, req: &Request<T>) -> Result<Principal, Status> {
        let source = req.remote_addr().map(|a| a.ip());
        let token = bearer(req)?;
        if let Some(token) = token.filter(|t| AdminCredential::is_admin_bearer(t)) {
            return self.admin_by_credential(token, source);
        }
        let certificate = req
            .peer_certs()
            .and_then(|certs| certs.first().and_then(cert_identity));
        let Some(policy) = &self.policy else {
            let open = matches!(self.admin, AdminGate::Open);
            return Ok(match certificate {
                Some(CertIdentity::Node(id)) => Principal::node(id, false, source),
                _ => Principal::unchecked(source, open),
            });
        };
        if let Some(token) = token {
            return policy
                .user_by_token(token)
                .map(Principal::of)
                .ok_or_else(|| Status::unauthenticated("unknown token"));
        }
        match certificate {
            Some(CertIdentity::Client(name)) => policy
                .user_by_name(&name)
                .map(Principal::of)
                .ok_or_else(|| {
                    Status::unauthenticated(format!(
                        "the client certificate names {name:?}, which the auth file does not list"
                    ))
                }),
            // A cluster member (an embedding application's own node) is
            // trusted with the cluster itself.
            Some(CertIdentity::Node(id)) => Ok(Principal::node(id, true, source)),
            None => Err(Status::unauthenticated(
                "this cluster requires authentication: send a token (RAFTLOCK_TOKEN, or the \
                 client's token setting) or present a client certificate",
            )),
        }
    }

    /// The caller who sent an admin credential (`rla1-...`): an admin if
    /// it is this cluster's, else refused, whatever the call.
    fn admin_by_credential(
        &self,
        token: &str,
        source: Option<std::net::IpAddr>,
    ) -> Result<Principal, Status> {
        let checked = self.policy.is_some();
        match &self.admin {
            AdminGate::Open => Ok(Principal::admin(checked, source)),
            AdminGate::Credential(Some(ours)) if ours.matches(token) => {
                Ok(Principal::admin(checked, source))
            }
            AdminGate::Credential(Some(_)) => Err(Status::unauthenticated(
                "the admin credential sent is not this cluster's (it is derived from the \
                 cluster's join token: give the data dir or join-token file of a member of \
                 this cluster)",
            )),
            AdminGate::Credential(None) => Err(Status::unauthenticated(
                "an admin credential was sent, but this cluster has no join token to check it \
                 against (its peers use TLS): present a node certificate (--cert/--key) instead",
            )),
        }
    }
}

/// The bearer token `req` carries, if any; UNAUTHENTICATED when the
/// metadata is there but malformed.
fn bearer<T>(req: &Request<T>) -> Result<Option<&str>, Status> {
    let Some(value) = req.metadata().get(AUTHORIZATION_KEY) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Some)
        .ok_or_else(|| {
            Status::unauthenticated("malformed authorization metadata: expected `Bearer TOKEN`")
        })
}

/// An authenticated caller and what it may touch.
#[derive(Debug, Clone)]
pub struct Principal {
    /// Whether checks apply (authentication on).
    checked: bool,
    /// Identity and admin flag, as writes carry them.
    caller: Caller,
    /// Names it may use, unless admin.
    names: Vec<NamePattern>,
    /// May make operator calls without being an admin (`--insecure`):
    /// unlike `caller.admin`, this gives no right in the state machine.
    open_admin: bool,
}

impl Principal {
    /// Anyone, when authentication is off, calling from `source`; `open`:
    /// operator calls are open to all (`--insecure`).
    fn unchecked(source: Option<std::net::IpAddr>, open: bool) -> Self {
        Principal {
            checked: false,
            caller: source.map(Caller::unauthenticated).unwrap_or_default(),
            names: Vec::new(),
            open_admin: open,
        }
    }

    /// A holder of the cluster's admin credential. Without an auth file it
    /// has no identity (its quotas and sessions are its source address's);
    /// with one it is [`ADMIN_CREDENTIAL_IDENTITY`].
    fn admin(checked: bool, source: Option<std::net::IpAddr>) -> Self {
        let (identity, source) = match checked {
            true => (Some(ADMIN_CREDENTIAL_IDENTITY.to_string()), None),
            false => (None, source.map(|ip| ip.to_canonical())),
        };
        Principal {
            checked,
            caller: Caller {
                identity,
                admin: true,
                source,
            },
            names: Vec::new(),
            open_admin: false,
        }
    }

    fn of(user: &User) -> Self {
        Principal {
            checked: true,
            caller: Caller {
                identity: Some(user.name.clone()),
                admin: user.admin,
                source: None,
            },
            names: user.names.clone(),
            open_admin: false,
        }
    }

    /// A cluster member's certificate. With an auth file (`checked`) it is
    /// the identity `node-N.raftlock`; without one it keeps the unchecked
    /// callers' account, its source address, and adds the admin right.
    fn node(id: u64, checked: bool, source: Option<std::net::IpAddr>) -> Self {
        Principal {
            checked,
            caller: Caller {
                identity: checked.then(|| node_dns_name(id)),
                admin: true,
                source: (!checked)
                    .then_some(source)
                    .flatten()
                    .map(|ip| ip.to_canonical()),
            },
            names: Vec::new(),
            open_admin: false,
        }
    }

    /// What a write records as its caller.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Whom its calls are charged to: its identity, or without
    /// authentication its source address (`None` only for a connection
    /// without an address, which the client listener never has).
    pub fn account(&self) -> Option<Account> {
        self.caller.account()
    }

    /// Whether it may see and use lock or election `name`.
    pub fn may_use(&self, name: &str) -> bool {
        !self.checked || self.caller.admin || self.names.iter().any(|p| p.matches(name))
    }

    /// PERMISSION_DENIED unless it may use `name`.
    pub fn check_name(&self, name: &str) -> Result<(), Status> {
        if self.may_use(name) {
            return Ok(());
        }
        let allowed = self
            .names
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>();
        Err(Status::permission_denied(format!(
            "{} may not use {name:?}: its roles allow {}",
            self.describe(),
            if allowed.is_empty() {
                "no names".to_string()
            } else {
                allowed.join(", ")
            }
        )))
    }

    /// PERMISSION_DENIED unless it has the admin role; `what` names the
    /// call. The message says how to prove it, never what the proof is.
    pub fn check_admin(&self, what: &str) -> Result<(), Status> {
        if self.caller.admin || self.open_admin {
            return Ok(());
        }
        let how = "the cluster's admin credential (on a member's host: the admin command with \
                   --data-dir DIR, that node's data dir, ./raftlock-data by default, or \
                   --join-token-file FILE; RAFTLOCK_JOIN_TOKEN_FILE) or a node certificate \
                   (--cert/--key)";
        Err(Status::permission_denied(match self.checked {
            true => format!(
                "{what} needs the admin role, which {} does not have; or {how}",
                self.describe()
            ),
            false => format!("{what} is an operator call and needs {how}"),
        }))
    }

    /// Whether it may use every lock and election name (and see every
    /// lease).
    pub fn may_use_every_name(&self) -> bool {
        !self.checked || self.caller.admin
    }

    /// PERMISSION_DENIED for a lease granted by another identity.
    pub fn lease_denied(&self, id: u64, owner: Option<&str>) -> Status {
        Status::permission_denied(format!(
            "{} may not see lease {id}: it belongs to {}",
            self.describe(),
            owner.unwrap_or("nobody")
        ))
    }

    /// Whether it may see lease records granted by `owner`.
    pub fn may_see_lease_of(&self, owner: Option<&str>) -> bool {
        !self.checked || self.caller.may_use_lease_of(owner)
    }

    fn describe(&self) -> String {
        match &self.caller.identity {
            Some(id) => format!("identity {id:?}"),
            None => "an unauthenticated caller".into(),
        }
    }
}
