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
//! are kept by ([`Account`]).

pub mod policy;

use std::sync::Arc;

use raftlock_raft::transport::tls::{cert_identity, node_dns_name, CertIdentity};
use raftlock_storage::{Account, Caller};
use tonic::{Request, Status};

use policy::{NamePattern, Policy, User};

/// Metadata key carrying the bearer token.
pub const AUTHORIZATION_KEY: &str = "authorization";

/// The node's authentication settings; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    /// `None`: authentication off.
    policy: Option<Arc<Policy>>,
}

impl Auth {
    /// Authentication by `policy`, or none.
    pub fn new(policy: Option<Policy>) -> Self {
        Auth {
            policy: policy.map(Arc::new),
        }
    }

    /// Whether calls must authenticate.
    pub fn enabled(&self) -> bool {
        self.policy.is_some()
    }

    /// Who sent `req`: UNAUTHENTICATED when authentication is on and the
    /// call proves no known identity.
    pub fn authenticate<T>(&self, req: &Request<T>) -> Result<Principal, Status> {
        let Some(policy) = &self.policy else {
            return Ok(Principal::unchecked(req.remote_addr().map(|a| a.ip())));
        };
        if let Some(value) = req.metadata().get(AUTHORIZATION_KEY) {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| {
                    Status::unauthenticated(
                        "malformed authorization metadata: expected `Bearer TOKEN`",
                    )
                })?;
            return policy
                .user_by_token(token)
                .map(Principal::of)
                .ok_or_else(|| Status::unauthenticated("unknown token"));
        }
        let certificate = req
            .peer_certs()
            .and_then(|certs| certs.first().and_then(cert_identity));
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
            Some(CertIdentity::Node(id)) => Ok(Principal::node(id)),
            None => Err(Status::unauthenticated(
                "this cluster requires authentication: send a token (RAFTLOCK_TOKEN, or the \
                 client's token setting) or present a client certificate",
            )),
        }
    }
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
}

impl Principal {
    /// Anyone, when authentication is off, calling from `source`.
    fn unchecked(source: Option<std::net::IpAddr>) -> Self {
        Principal {
            checked: false,
            caller: source.map(Caller::unauthenticated).unwrap_or_default(),
            names: Vec::new(),
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
        }
    }

    fn node(id: u64) -> Self {
        Principal {
            checked: true,
            caller: Caller {
                identity: Some(node_dns_name(id)),
                admin: true,
                source: None,
            },
            names: Vec::new(),
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

    /// PERMISSION_DENIED unless it has the admin role; `what` names the call.
    pub fn check_admin(&self, what: &str) -> Result<(), Status> {
        if !self.checked || self.caller.admin {
            return Ok(());
        }
        Err(Status::permission_denied(format!(
            "{what} needs the admin role, which {} does not have",
            self.describe()
        )))
    }

    /// Whether it may use every lock and election name.
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
