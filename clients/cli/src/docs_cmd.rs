//! `raftlock completions SHELL` and `raftlock man`: shell completions and
//! man pages, generated from the same clap definition as `--help` (so a
//! new command or flag is in them at once), each page with an EXIT STATUS
//! section from [`super::exit_codes`].

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

use super::{exit_codes, Cli, EXIT_SUCCESS};

/// Flags of `raftlock man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The command whose page to print, e.g. `lock` or `lease grant`
    /// (default: raftlock(1)).
    command: Vec<String>,
    /// Write every page (raftlock.1, raftlock-lock.1, raftlock-lease-grant.1,
    /// ...) into DIR instead, e.g. /usr/local/share/man/man1.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<PathBuf>,
}

/// Writes completions for `shell` to stdout (e.g. `raftlock completions
/// bash > /etc/bash_completion.d/raftlock`).
pub fn completions(shell: Shell) -> Result<u8, String> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "raftlock", &mut out);
    write_out(&out, "completions")
}

/// `raftlock man [COMMAND...]` prints one page (roff) to stdout;
/// `raftlock man --dir DIR` writes them all.
pub fn man(args: ManArgs) -> Result<u8, String> {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    if let Some(dir) = args.dir {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut written = Vec::new();
        write_pages(&root, &[], &dir, &mut written)?;
        out!("wrote {} man pages to {}", written.len(), dir.display());
        return Ok(EXIT_SUCCESS);
    }
    let mut command = &root;
    for (depth, name) in args.command.iter().enumerate() {
        command = command.find_subcommand(name).ok_or_else(|| {
            let parent = ["raftlock"]
                .into_iter()
                .chain(args.command[..depth].iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            format!("`{parent}` has no command {name:?}; see `{parent} --help`")
        })?;
    }
    let path: Vec<&str> = args.command.iter().map(String::as_str).collect();
    let page = render(command, &path)?;
    write_out(&page, "the man page")
}

/// Writes the page of `command` (at `path`) and of each of its commands
/// into `dir`, adding each file to `written`.
fn write_pages(
    command: &clap::Command,
    path: &[&str],
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let page = render(command, path)?;
    let name = std::iter::once("raftlock")
        .chain(path.iter().copied())
        .collect::<Vec<_>>()
        .join("-");
    let file = dir.join(format!("{name}.1"));
    std::fs::write(&file, page).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    written.push(file);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut sub_path = path.to_vec();
        sub_path.push(sub.get_name());
        write_pages(sub, &sub_path, dir, written)?;
    }
    Ok(())
}

/// The roff page of `command`: clap_mangen's sections, then EXIT STATUS.
fn render(command: &clap::Command, path: &[&str]) -> Result<Vec<u8>, String> {
    let codes = if path.is_empty() {
        exit_codes::overview()
    } else {
        exit_codes::for_command(path).to_owned()
    };
    let mut command = command.clone();
    // `lock --help` ends with its codes: the page lists them once.
    if command.get_after_help().map(|h| h.to_string()) == Some(codes.clone()) {
        command = command.after_help(None::<&'static str>);
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .source(concat!("raftlock ", env!("CARGO_PKG_VERSION")))
        .render(&mut page)
        .map_err(|e| format!("cannot render the man page: {e}"))?;
    let body = codes.strip_prefix("Exit codes:\n").unwrap_or(&codes);
    page.extend_from_slice(b".SH \"EXIT STATUS\"\n.nf\n");
    for line in body.lines() {
        page.extend_from_slice(roff_line(line).as_bytes());
        page.push(b'\n');
    }
    page.extend_from_slice(b".fi\n");
    Ok(page)
}

/// `line` as literal roff text: backslashes escaped, and a leading `.` or
/// `'` (a request) kept as text.
fn roff_line(line: &str) -> String {
    let escaped = line.replace('\\', "\\e");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// Writes `bytes` to stdout; a reader that went away (`| head`) is fine.
fn write_out(bytes: &[u8], what: &str) -> Result<u8, String> {
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write {what}: {e}"))
        }
        _ => Ok(EXIT_SUCCESS),
    }
}
