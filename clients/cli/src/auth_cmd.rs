//! `raftlock auth create-token|check`: make a bearer token and the auth
//! file entry that accepts it, and check an auth file before a node reads
//! it (the format is in [`raftlock::auth::policy`]). What `create-token`
//! prints is checked as a node would read it before it is printed, so
//! pasted into an auth file (or a new one) it passes `auth check`.

use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::EXIT_SUCCESS;
use raftlock::auth::policy::{token_sha256, Policy, ADMIN_ROLE};

/// `raftlock auth ...`
#[derive(Debug, clap::Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuthCommand {
    /// Make a new random token for a user and print it with the auth file
    /// entry (its SHA-256, never the token) that lets it in, and a
    /// definition of each role it names that is not defined yet (`ROLE/*`:
    /// edit the names). The token is shown once: give it to the client as
    /// RAFTLOCK_TOKEN or --token.
    CreateToken {
        /// The user's name: the identity its leases are recorded under.
        #[arg(long)]
        user: String,
        /// A role for the entry (`admin`, or one defined in the file);
        /// repeat for each.
        #[arg(long = "role", required = true)]
        roles: Vec<String>,
        /// The auth file the entry is for: roles it defines are not
        /// printed again, and the entry is checked together with it.
        #[arg(long)]
        auth_file: Option<PathBuf>,
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
        AuthCommand::CreateToken {
            user,
            roles,
            auth_file,
        } => create_token(&user, &roles, auth_file.as_deref()),
        AuthCommand::Check { auth_file } => {
            let policy = Policy::load(&auth_file).map_err(|e| e.to_string())?;
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

/// `raftlock auth create-token`: prints the token, then the TOML to add.
fn create_token(user: &str, roles: &[String], auth_file: Option<&Path>) -> Result<u8, String> {
    if user.is_empty() {
        return Err("the user name is empty: give --user NAME".into());
    }
    let existing = match auth_file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read auth file {}: {e}", path.display()))?,
        None => String::new(),
    };
    let defined = defined_roles(&existing)
        .map_err(|e| format!("auth file {}: {e}", auth_file_name(auth_file)))?;
    // 244 random bits from the operating system's generator.
    let token = format!("rl_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    let entry = entry(user, roles, &token_sha256(&token), &defined);
    // What a node would read: the file as it is, then the entry.
    Policy::parse(&format!("{existing}\n{entry}")).map_err(|e| match auth_file {
        Some(path) => format!("the entry would not fit {}: {e}", path.display()),
        None => format!("cannot make an entry for these flags: {e}"),
    })?;
    out!("token: {token}");
    out!("# Add to the auth file of every node, then restart them:");
    out!("{}", entry.trim_end());
    Ok(EXIT_SUCCESS)
}

fn auth_file_name(path: Option<&Path>) -> String {
    path.map_or_else(String::new, |p| p.display().to_string())
}

/// The roles an auth file's text defines (`[roles.NAME]`).
fn defined_roles(text: &str) -> Result<Vec<String>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    Ok(match table.get("roles") {
        Some(toml::Value::Table(roles)) => roles.keys().cloned().collect(),
        _ => Vec::new(),
    })
}

/// The TOML for one user: a `[roles.NAME]` for each role neither built in
/// nor in `defined` (names `ROLE/*`, to edit), then its `[[users]]` entry.
fn entry(user: &str, roles: &[String], sha256: &str, defined: &[String]) -> String {
    let mut text = String::new();
    let mut added: Vec<&String> = Vec::new();
    for role in roles {
        if role == ADMIN_ROLE || defined.contains(role) || added.contains(&role) {
            continue;
        }
        added.push(role);
        text.push_str(&format!(
            "[roles.{}]\nnames = [{}]   # lock and election names: \"prefix*\" or exact\n\n",
            toml_key(role),
            toml_string(&format!("{role}/*"))
        ));
    }
    let roles: Vec<String> = roles.iter().map(|r| toml_string(r)).collect();
    text.push_str(&format!(
        "[[users]]\nname = {}\ntoken_sha256 = \"{sha256}\"\nroles = [{}]\n",
        toml_string(user),
        roles.join(", ")
    ));
    text
}

/// `text` as a TOML string, escaped as TOML escapes.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// `text` as a TOML key: bare when it may be, else quoted.
fn toml_key(text: &str) -> String {
    let bare = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        text.to_owned()
    } else {
        toml_string(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry for a role the file does not define defines it, and reads
    /// as a node reads it; without the role definition a node refused it
    /// ("role \"jobs\" ... is not defined").
    #[test]
    fn an_entry_with_a_new_role_is_a_valid_auth_file() {
        let text = entry("scheduler", &["jobs".into()], &"a".repeat(64), &[]);
        let policy = Policy::parse(&text).expect(&text);
        let user = policy.user_by_name("scheduler").expect("user");
        assert!(!user.admin);
        assert_eq!(user.names[0].to_string(), "jobs/*");
    }

    /// Odd names are escaped, not pasted raw into the TOML.
    #[test]
    fn odd_names_are_escaped() {
        let text = entry(
            "a\"b\\c\u{1b}",
            &["admin".into(), "x y".into(), "x y".into()],
            &"b".repeat(64),
            &[],
        );
        let policy = Policy::parse(&text).expect(&text);
        assert!(policy.user_by_name("a\"b\\c\u{1b}").expect("user").admin);
    }

    /// A role the file defines already is not defined twice.
    #[test]
    fn a_defined_role_is_not_repeated() {
        let file = "[roles.jobs]\nnames = [\"cron\"]\n";
        let defined = defined_roles(file).expect("roles");
        let text = entry("s", &["jobs".into()], &"c".repeat(64), &defined);
        assert!(!text.contains("[roles."), "{text}");
        Policy::parse(&format!("{file}\n{text}")).expect("valid");
    }
}
