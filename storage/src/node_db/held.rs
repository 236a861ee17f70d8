//! What an opened dir holds of Raft ([`Held`]: its vote, log, purge,
//! snapshot and committed index) and the checks it must pass before a node
//! runs on it: its parts agree with each other, it still holds what its
//! identity file says it held, and it belongs to the node and cluster the
//! node was started as. Apart from the open, which runs these checks on
//! what it read, because they are the rules, not the IO.

use crate::error::Error;
use crate::identity::{Bootstrap, Floor, Identity, IDENTITY_FILE};
use crate::log_store::LogStore;
use crate::sm_store::StateMachineStore;

use super::OpenOptions;

/// The Raft state found in an opened dir.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held {
    /// The saved vote's term.
    pub(super) vote_term: Option<u64>,
    /// The last entry's index.
    pub(super) last_log: Option<u64>,
    /// The last purged index.
    purged: Option<u64>,
    /// The last index the loaded snapshot covers.
    snapshot: Option<u64>,
    /// The committed index sled has (0 for none).
    committed: u64,
}

impl Held {
    /// Reads what `log` holds, and where `sm`, just opened, stands: at its
    /// snapshot, which it has already read and checked.
    pub(super) fn read(log: &LogStore, sm: &StateMachineStore) -> Result<Self, Error> {
        Ok(Self {
            vote_term: log.vote()?.map(|v| v.leader_id().term),
            last_log: log.last_entry_id()?.map(|l| l.index),
            purged: log.last_purged()?.map(|p| p.index),
            snapshot: sm.applied()?.0.map(|l| l.index),
            committed: log.read_committed_id()?.map_or(0, |c| c.index),
        })
    }

    pub(super) fn has_state(&self) -> bool {
        self.vote_term.is_some()
            || self.last_log.is_some()
            || self.purged.is_some()
            || self.snapshot.is_some()
    }

    /// The highest index whose effects the dir holds (in its log or its
    /// snapshot).
    fn covered(&self) -> u64 {
        self.last_log
            .unwrap_or(0)
            .max(self.purged.unwrap_or(0))
            .max(self.snapshot.unwrap_or(0))
    }

    /// The log and snapshot agree with each other and with the committed
    /// index sled recorded.
    pub(super) fn check_consistent(&self) -> Result<(), String> {
        if let Some(purged) = self.purged {
            match self.snapshot {
                None => {
                    return Err(format!(
                        "the log was purged up to index {purged} but there is no snapshot"
                    ))
                }
                Some(s) if s < purged => {
                    return Err(format!(
                        "the log was purged up to index {purged} but the snapshot \
                         only covers up to {s}"
                    ))
                }
                Some(_) => {}
            }
        }
        if self.covered() < self.committed {
            return Err(format!(
                "the log ends at index {} below the committed index {}",
                self.covered(),
                self.committed
            ));
        }
        Ok(())
    }

    /// The dir still holds what its identity file says it held.
    pub(super) fn check_floor(&self, floor: &Floor) -> Result<(), String> {
        let (vote_term, last_log) = (self.vote_term.unwrap_or(0), self.last_log.unwrap_or(0));
        if vote_term < floor.vote_term {
            return Err(format!(
                "the saved vote is for term {} but this node voted in term {} \
                 (recorded in {IDENTITY_FILE}): the vote was lost",
                vote_term, floor.vote_term
            ));
        }
        if self.covered() < floor.committed {
            return Err(format!(
                "the log and snapshot end at index {} but index {} was committed \
                 and stored here (recorded in {IDENTITY_FILE}): entries were lost",
                self.covered(),
                floor.committed
            ));
        }
        if floor.clean_shutdown && last_log < floor.last_log_at_shutdown {
            return Err(format!(
                "the log ends at index {} but it ended at {} when the node last \
                 stopped cleanly (recorded in {IDENTITY_FILE}): entries were lost",
                last_log, floor.last_log_at_shutdown
            ));
        }
        Ok(())
    }
}

/// The dir belongs to the node and cluster `options` describe.
pub(super) fn check_identity(identity: &Identity, options: &OpenOptions) -> Result<(), String> {
    if identity.node_id != options.node_id {
        return Err(format!(
            "the dir belongs to node {}, but this node was started as node {} \
             (check --id and --data-dir)",
            identity.node_id, options.node_id
        ));
    }
    let contradicts = match (&options.bootstrap, &identity.bootstrap) {
        // No --initial-cluster and no --join: no claim about the cluster.
        (Bootstrap::SingleNode, _) => false,
        (given, recorded) => given != recorded,
    };
    if contradicts {
        return Err(format!(
            "the dir was created for {}, but this node was started with {} \
             (an existing dir keeps its cluster: start with the flags it was created with, \
             or without --initial-cluster / --join)",
            describe(&identity.bootstrap),
            describe(&options.bootstrap)
        ));
    }
    Ok(())
}

fn describe(bootstrap: &Bootstrap) -> String {
    match bootstrap {
        Bootstrap::SingleNode => "a one-node cluster".into(),
        Bootstrap::Cluster { members } => format!("--initial-cluster {members}"),
        Bootstrap::Join => "--join".into(),
    }
}
