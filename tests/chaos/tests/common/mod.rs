//! What the smoke tests share: a seed and an output dir, each taken from
//! an environment variable when set.

use std::path::{Path, PathBuf};

/// `$var`, or a fresh seed from the clock (it widens coverage run to run,
/// and the run prints it for replay).
pub fn seed(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
            % 100_000)
            .to_string()
    })
}

/// `$var`, or `name` inside `temp`.
pub fn out_dir(var: &str, temp: &Path, name: &str) -> PathBuf {
    std::env::var(var)
        .map(PathBuf::from)
        .unwrap_or_else(|_| temp.join(name))
}
