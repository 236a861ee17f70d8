//! The table of which process last spoke for each node id (its boot count,
//! incarnation and address): what [`super::PeerGuard`] judges a message's
//! sender against, and changes only once that message passed every check.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use uuid::Uuid;

use raftlock_storage::NodeId;

use super::{Refusal, SeenProcess, Sender, MAX_BOOT_STEP, MAX_SENDERS};

/// The last process seen speaking for one node id.
#[derive(Debug, Clone)]
struct Speaker {
    boot: u64,
    incarnation: Uuid,
    remote: Option<SocketAddr>,
    last: Instant,
}

impl Speaker {
    fn describe(&self) -> Box<SeenProcess> {
        Box::new(SeenProcess::At {
            remote: self.remote,
            boot: self.boot,
            incarnation: self.incarnation,
        })
    }
}

/// What recording an admitted message does to the sender's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The process already on record: only its last contact changes.
    Known,
    /// The first message from this node id: a new entry.
    First,
    /// A later start of the node, its old process quiet: it replaces it.
    Restarted,
}

/// Per node id, the process that last sent this node a request.
pub(super) struct Speakers {
    table: Mutex<HashMap<NodeId, Speaker>>,
    /// A process that spoke more recently than this is alive: another
    /// process with the same id is refused meanwhile.
    alive_for: Duration,
}

impl Speakers {
    pub(super) fn new(alive_for: Duration) -> Self {
        Self {
            table: Mutex::default(),
            alive_for,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<NodeId, Speaker>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What recording a message from `sender` would do, or why it is
    /// refused. Changes nothing.
    pub(super) fn judge(
        &self,
        sender: Sender,
        remote: Option<SocketAddr>,
        now: Instant,
    ) -> Result<Verdict, (&'static str, Refusal)> {
        self.judge_in(&self.lock(), sender, remote, now)
    }

    /// Judges `sender` again and, if it passes, records it, under one lock.
    /// `node` is this node's id, for the log.
    pub(super) fn record(
        &self,
        node: NodeId,
        sender: Sender,
        remote: Option<SocketAddr>,
        now: Instant,
    ) -> Result<(), (&'static str, Refusal)> {
        let mut table = self.lock();
        let verdict = self.judge_in(&table, sender, remote, now)?;
        let speaker = Speaker {
            boot: sender.boot,
            incarnation: sender.incarnation,
            remote,
            last: now,
        };
        match verdict {
            Verdict::Known => {
                if let Some(known) = table.get_mut(&sender.id) {
                    known.last = now;
                    known.remote = remote.or(known.remote);
                }
            }
            Verdict::First => {
                table.insert(sender.id, speaker);
            }
            Verdict::Restarted => {
                if let Some(known) = table.insert(sender.id, speaker.clone()) {
                    tracing::info!(
                        node,
                        peer = sender.id,
                        "peer restarted: {} replaces {}",
                        speaker.describe(),
                        known.describe()
                    );
                }
            }
        }
        Ok(())
    }

    /// What recording a message from `sender` would do to `speakers`, or
    /// why it is refused (with the kind of refusal, for the log).
    fn judge_in(
        &self,
        speakers: &HashMap<NodeId, Speaker>,
        sender: Sender,
        remote: Option<SocketAddr>,
        now: Instant,
    ) -> Result<Verdict, (&'static str, Refusal)> {
        let Some(known) = speakers.get(&sender.id) else {
            if speakers.len() >= MAX_SENDERS {
                return Err(("senders", Refusal::TooManySenders));
            }
            return Ok(Verdict::First);
        };
        if known.incarnation == sender.incarnation {
            return Ok(Verdict::Known);
        }
        let candidate = Speaker {
            boot: sender.boot,
            incarnation: sender.incarnation,
            remote,
            last: now,
        };
        let ago = now.saturating_duration_since(known.last);
        if sender.boot < known.boot {
            return Err((
                "speaker",
                Refusal::Rollback {
                    from: sender.id,
                    boot: sender.boot,
                    seen: known.boot,
                    seen_at: known.describe(),
                },
            ));
        }
        if sender.boot - known.boot > MAX_BOOT_STEP {
            return Err((
                "boot",
                Refusal::ImplausibleBoot {
                    from: sender.id,
                    boot: sender.boot,
                    seen: Some(known.boot),
                },
            ));
        }
        // A restart raises the boot count before anything is sent: two
        // processes with one count started from one copy of a dir, and a
        // higher count from a sender heard within `alive_for` is a second
        // process while the first still speaks.
        if sender.boot == known.boot || ago < self.alive_for {
            return Err((
                "speaker",
                Refusal::Duplicate {
                    from: sender.id,
                    active: known.describe(),
                    other: candidate.describe(),
                    ago,
                },
            ));
        }
        Ok(Verdict::Restarted)
    }
}
