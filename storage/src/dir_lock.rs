//! Who has a data dir open. sled takes an exclusive `flock` on the dir's
//! `db` file for as long as a process has the database open, and a second
//! open fails with nothing but `WouldBlock`. The kernel's lock table
//! (`/proc/locks` on Linux) names the process holding it, and
//! `/proc/PID/comm` its program, so the refusal can say whom to stop.
//!
//! Read-only: finding the holder writes nothing, so a node refused here
//! leaves the dir exactly as the running process keeps it.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The kernel's table of file locks (Linux).
const LOCK_TABLE: &str = "/proc/locks";

/// A process holding a lock on a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// Its process id, as the reader's pid namespace sees it.
    pub pid: u32,
    /// Its program name (`/proc/PID/comm`), when readable.
    pub program: Option<String>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.program {
            Some(program) => write!(f, "pid {}, {program}", self.pid),
            None => write!(f, "pid {}", self.pid),
        }
    }
}

/// The process holding a lock on `file`, if the system says: `None` when
/// nothing locks it, or on a system without `/proc/locks`.
pub fn lock_holder(file: &Path) -> Option<LockHolder> {
    let meta = std::fs::metadata(file).ok()?;
    let table = std::fs::read_to_string(LOCK_TABLE).ok()?;
    let pid = holder_in(&table, FileId::of(&meta))?;
    let program = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|name| name.trim_end().to_string())
        .filter(|name| !name.is_empty());
    Some(LockHolder { pid, program })
}

/// A file as `/proc/locks` names it: device major and minor, inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    major: u64,
    minor: u64,
    inode: u64,
}

impl FileId {
    /// The id of the file `meta` describes. `st_dev` splits into major and
    /// minor as glibc's `major()`/`minor()` split it.
    fn of(meta: &std::fs::Metadata) -> FileId {
        let dev = meta.dev();
        FileId {
            major: ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff),
            minor: ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff),
            inode: meta.ino(),
        }
    }
}

/// The pid of a granted lock on `file` in `table` (`/proc/locks`' format:
/// `1: FLOCK  ADVISORY  WRITE 10666 fe:00:10011378 0 EOF`; a request
/// still waiting is listed as `1: -> FLOCK ...` and is skipped, as are
/// locks without a pid: open file description locks show -1).
fn holder_in(table: &str, file: FileId) -> Option<u32> {
    table.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") {
            return None;
        }
        let pid: u32 = fields.get(4)?.parse().ok().filter(|&pid| pid != 0)?;
        let mut id = fields.get(5)?.split(':');
        let found = FileId {
            major: u64::from_str_radix(id.next()?, 16).ok()?,
            minor: u64::from_str_radix(id.next()?, 16).ok()?,
            inode: id.next()?.parse().ok()?,
        };
        (found == file).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: FileId = FileId {
        major: 0xfe,
        minor: 0,
        inode: 10011378,
    };

    #[test]
    fn the_granted_lock_on_the_file_names_its_pid() {
        let table = "\
1: POSIX  ADVISORY  WRITE 77 fe:00:5 0 EOF
2: -> FLOCK  ADVISORY  WRITE 99 fe:00:10011378 0 EOF
3: OFDLCK ADVISORY  READ  -1 fe:00:10011378 0 EOF
4: FLOCK  ADVISORY  WRITE 10666 fe:00:10011378 0 EOF
";
        assert_eq!(holder_in(table, FILE), Some(10666));
        assert_eq!(holder_in(table, FileId { minor: 1, ..FILE }), None);
        assert_eq!(holder_in("", FILE), None);
    }

    #[test]
    fn a_lock_taken_here_is_found_and_an_unlocked_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(lock_holder(&path), None);
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let held = lock_holder(&dir.path().join("db"));
        if std::path::Path::new(LOCK_TABLE).exists() {
            let held = held.expect("sled's lock is in /proc/locks");
            assert_eq!(held.pid, std::process::id());
            assert!(held.program.is_some(), "{held}");
        }
        drop(db);
    }
}
