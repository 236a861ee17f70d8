//! The `raftlock` binary: parse the command line and run it.

fn main() -> std::process::ExitCode {
    raftlock::cli::main()
}
