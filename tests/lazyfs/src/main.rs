//! `lazyfs MOUNTPOINT`: mounts a lazy filesystem for manual demonstrations;
//! SIGUSR1 cuts the power, SIGINT or SIGTERM unmounts and exits.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use nix::sys::signal::{SigSet, Signal};
use raftlock_lazyfs::LazyFs;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let [mountpoint] = args.as_slice() else {
        eprintln!("usage: lazyfs MOUNTPOINT   (SIGUSR1 cuts the power, SIGINT/SIGTERM unmount)");
        return ExitCode::from(2);
    };
    // Block the signals before the FUSE threads start (they inherit the mask),
    // so that only the sigwait below receives them.
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGUSR1, Signal::SIGINT, Signal::SIGTERM] {
        signals.add(signal);
    }
    if let Err(error) = signals.thread_block() {
        eprintln!("lazyfs: cannot block signals: {error}");
        return ExitCode::FAILURE;
    }
    let fs = match LazyFs::mount(&PathBuf::from(mountpoint)) {
        Ok(fs) => fs,
        Err(error) => {
            eprintln!("lazyfs: {error}");
            return ExitCode::FAILURE;
        }
    };
    say("mounted");
    loop {
        match signals.wait() {
            Ok(Signal::SIGUSR1) => match fs.cut_power() {
                Ok(()) => say(&format!(
                    "power cut: dropped {} bytes",
                    fs.stats().last_cut_dropped_bytes
                )),
                Err(error) => eprintln!("lazyfs: {error}"),
            },
            Ok(_) => break,
            Err(error) => {
                eprintln!("lazyfs: waiting for signals failed: {error}");
                break;
            }
        }
    }
    drop(fs);
    say("unmounted");
    ExitCode::SUCCESS
}

/// Prints one status line and flushes it, so a script reading our stdout sees it now.
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    // A closed stdout only loses the status line; the filesystem works on.
    let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}
