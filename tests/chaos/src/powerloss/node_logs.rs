//! What the nodes' logs say, for check (e): the last lines of a node that
//! did not restart, and every panic a node logged (a node whose Raft core
//! panicked keeps running but answers every call with an internal error).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::cluster::Cluster;

/// Lines of a failed node's log shown in the summary.
const TAIL: usize = 12;

/// The last lines of a node's log, indented.
pub fn tail(path: &Path) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(TAIL);
            lines[from..]
                .iter()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Err(e) => format!("    (cannot read {}: {e})", path.display()),
    }
}

/// How far each node's log has been read.
#[derive(Debug, Default)]
pub struct NodeLogs {
    read: BTreeMap<u64, u64>,
}

impl NodeLogs {
    /// Panics logged since the last call, one line per panic (where, and
    /// the message on the next line), per node.
    pub fn new_panics(&mut self, cluster: &Cluster) -> Vec<(u64, String)> {
        let mut found = Vec::new();
        for id in cluster.ids() {
            let Some(spec) = cluster.spec(id) else {
                continue;
            };
            let from = self.read.get(&id).copied().unwrap_or(0);
            let Ok((text, to)) = read_from(&spec.log, from) else {
                continue;
            };
            self.read.insert(id, to);
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.contains("panicked at") {
                    let what = lines.get(i + 1).copied().unwrap_or("");
                    found.push((id, format!("{} {}", line.trim(), what.trim())));
                }
            }
        }
        found
    }
}

/// The text of `path` from byte `from`, and where it ends.
fn read_from(path: &Path, from: u64) -> std::io::Result<(String, u64)> {
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let to = from + bytes.len() as u64;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), to))
}
