//! The `raftlock` binary: parse the command line and run it.

/// mimalloc instead of glibc's malloc, for the binary only (an application
/// embedding a node keeps its own allocator). A node's allocations are many
/// small, short-lived objects across threads (entries, events, gRPC
/// buffers); in a profile of a 100 000-lease expiry glibc's malloc/free
/// paths took over a third of the nodes' CPU, and its heap kept snapshot
/// buffers long after they were freed. docs/decisions.md has the figures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    raftlock_cli::main()
}
