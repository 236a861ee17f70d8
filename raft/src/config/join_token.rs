//! The join token's text form, `rlj1-` and 64 hex digits: the cluster
//! secret as a setting carries it (`join_token`, a token file, a data
//! dir's key file). The secret's use is `peer::auth`'s.

const TOKEN_PREFIX: &str = "rlj1-";

/// A join token that is not `rlj1-` and 64 hex digits. The token itself
/// is not kept: it is a secret, and this error is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a join token is `rlj1-` and 64 hex digits (`raftlock certs create-join-token` makes one)")]
pub struct BadJoinToken;

/// Reads a join token's 32 secret bytes.
pub fn parse(token: &str) -> Result<[u8; 32], BadJoinToken> {
    let bad = || BadJoinToken;
    let hex = token.trim().strip_prefix(TOKEN_PREFIX).ok_or_else(bad)?;
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(bytes)
}

/// The join token that carries `secret`.
pub fn format(secret: &[u8; 32]) -> String {
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    format!("{TOKEN_PREFIX}{hex}")
}
