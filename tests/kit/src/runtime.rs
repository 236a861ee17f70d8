//! The async runtime a harness binary (the chaos runner, the benchmark)
//! runs on.

/// A multi-thread tokio runtime with IO and time, or `None` after telling
/// stderr why it could not start (the binary then exits with a failure).
pub fn multi_thread() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| eprintln!("error: cannot start the async runtime: {e}"))
        .ok()
}
