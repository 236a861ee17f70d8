//! `raftlock auth create-token|check`: make a bearer token and the auth
//! file entry that accepts it, and check an auth file before a node reads
//! it (the format is in [`crate::auth::policy`]).

use std::path::PathBuf;

use uuid::Uuid;

use super::EXIT_SUCCESS;
use crate::auth::policy::{token_sha256, Policy};

/// `raftlock auth ...`
#[derive(Debug, clap::Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuthCommand {
    /// Make a new random token for a user and print it with the auth file
    /// entry (its SHA-256, never the token) that lets it in. The token is
    /// shown once: give it to the client as RAFTLOCK_TOKEN or --token.
    CreateToken {
        /// The user's name: the identity its leases are recorded under.
        #[arg(long)]
        user: String,
        /// A role for the entry (`admin`, or one defined in the file);
        /// repeat for each.
        #[arg(long = "role", required = true)]
        roles: Vec<String>,
    },
    /// Read an auth file, refuse it as a node would, and list its users.
    Check {
        /// The auth file.
        #[arg(long, env = "RAFTLOCK_AUTH_FILE")]
        auth_file: PathBuf,
    },
}

/// Runs `raftlock auth ...`.
pub fn run(args: AuthArgs) -> Result<u8, String> {
    match args.command {
        AuthCommand::CreateToken { user, roles } => {
            if user.is_empty() || user.contains('"') || user.contains('\\') {
                return Err(format!(
                    "bad user name {user:?}: use letters, digits, '.', '_', '-'"
                ));
            }
            // 244 random bits from the operating system's generator.
            let token = format!("rl_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
            let roles = roles
                .iter()
                .map(|r| format!("{r:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            out!("token: {token}");
            out!("# Add to the auth file of every node, then restart them:");
            out!("[[users]]");
            out!("name = {user:?}");
            out!("token_sha256 = \"{}\"", token_sha256(&token));
            out!("roles = [{roles}]");
            Ok(EXIT_SUCCESS)
        }
        AuthCommand::Check { auth_file } => {
            let policy = Policy::load(&auth_file)?;
            let users = policy.user_names();
            out!(
                "{}: {} user(s): {}",
                auth_file.display(),
                users.len(),
                users.into_iter().collect::<Vec<_>>().join(", ")
            );
            Ok(EXIT_SUCCESS)
        }
    }
}
