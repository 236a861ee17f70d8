//! `raftlock certs create-ca|create-node|create-client`: a cluster's
//! certificates in one directory (see [`crate::certs`] for the files and
//! what each certificate names); `create-join-token`: the secret that
//! authenticates peers without a CA.

use std::path::PathBuf;

use super::EXIT_SUCCESS;
use crate::certs;

/// `raftlock certs ...`
#[derive(Debug, clap::Args)]
pub struct CertsArgs {
    #[command(subcommand)]
    command: CertsCommand,
}

/// Where the files go, and whether existing ones may be replaced.
#[derive(Debug, clap::Args)]
struct Target {
    /// Directory of the certificates (ca.crt, node-N.crt, client-NAME.crt
    /// and their keys). Created if missing.
    #[arg(long, env = "RAFTLOCK_CERTS_DIR")]
    certs_dir: PathBuf,
    /// Replace files that exist. Without it, an existing file is an error
    /// and nothing is written.
    #[arg(long)]
    overwrite: bool,
}

// The subcommands are `create-*`, as `cockroach cert` spells them.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, clap::Subcommand)]
enum CertsCommand {
    /// Create the cluster CA: ca.crt and ca.key (valid 10 years).
    CreateCa {
        #[command(flatten)]
        target: Target,
    },
    /// Create node-ID.crt/.key signed by the CA: names node-ID.raftlock and
    /// every --host; good for serving and for dialling peers (5 years).
    CreateNode {
        /// The node's id (as `raftlock serve --id`).
        #[arg(long)]
        id: u64,
        /// A name or IP address clients and peers reach the node by; repeat
        /// for each (e.g. --host 127.0.0.1 --host localhost).
        #[arg(long = "host", required = true)]
        hosts: Vec<String>,
        /// The CA key, if not CERTS_DIR/ca.key.
        #[arg(long)]
        ca_key: Option<PathBuf>,
        #[command(flatten)]
        target: Target,
    },
    /// Create client-NAME.crt/.key signed by the CA: common name NAME, URI
    /// raftlock:client:NAME; for client use only (5 years).
    CreateClient {
        /// The client's name (letters, digits, '.', '_', '-').
        #[arg(long)]
        name: String,
        /// The CA key, if not CERTS_DIR/ca.key.
        #[arg(long)]
        ca_key: Option<PathBuf>,
        #[command(flatten)]
        target: Target,
    },
    /// Print a new join token: the secret every member of a new cluster is
    /// started with (`raftlock serve --join-token-file FILE`, or
    /// RAFTLOCK_JOIN_TOKEN) when peers do not use TLS.
    CreateJoinToken {
        /// Write it to this file (readable by its owner only) instead; an
        /// existing file is an error.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

pub fn run(args: CertsArgs) -> Result<u8, String> {
    let written = match &args.command {
        CertsCommand::CreateJoinToken { out } => return create_join_token(out.as_deref()),
        CertsCommand::CreateCa { target } => certs::create_ca(&target.certs_dir, target.overwrite),
        CertsCommand::CreateNode {
            id,
            hosts,
            ca_key,
            target,
        } => certs::create_node(
            &target.certs_dir,
            ca_key.as_deref(),
            *id,
            hosts,
            target.overwrite,
        ),
        CertsCommand::CreateClient {
            name,
            ca_key,
            target,
        } => certs::create_client(&target.certs_dir, ca_key.as_deref(), name, target.overwrite),
    }
    .map_err(|e| e.to_string())?;
    for file in written {
        out!("wrote {}", file.display());
    }
    Ok(EXIT_SUCCESS)
}

/// `raftlock certs create-join-token`: prints a new token, or writes it to
/// `out` (owner-only, never over an existing file).
fn create_join_token(out: Option<&std::path::Path>) -> Result<u8, String> {
    let key = raftlock_raft::peer::auth::ClusterKey::generate();
    match out {
        Some(path) if path.exists() => {
            return Err(format!("{} exists; nothing written", path.display()))
        }
        Some(path) => {
            key.write_file(path).map_err(|e| e.to_string())?;
            out!("wrote {}", path.display());
        }
        None => out!("{}", key.to_token()),
    }
    Ok(EXIT_SUCCESS)
}
