//! Snapshots cross the peer API in pieces: the leader cuts a snapshot into
//! [`SnapshotChunk`]s ([`pieces`]), one message each, and the follower puts
//! them back together ([`Assembly`]) before installing the whole snapshot.
//! A piece that does not continue the snapshot under way is refused, and the
//! leader starts that snapshot over.

use std::io::Cursor;

use serde::{Deserialize, Serialize};
use tonic::Status;

use raftlock_storage::{NodeId, Snapshot, SnapshotMeta, Vote};

/// Snapshots cross the peer API in pieces of this many bytes, each its own
/// message (under every receiver's message limit).
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// One piece of a snapshot on its way to a follower. The pieces of one
/// snapshot carry the same vote and meta, and offsets that follow each
/// other from 0; the last has `done`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapshotChunk {
    /// The sending leader's vote.
    pub vote: Vote,
    /// What the snapshot covers.
    pub meta: SnapshotMeta,
    /// Where `data` starts in the snapshot's bytes.
    pub offset: u64,
    /// The bytes.
    pub data: Vec<u8>,
    /// The last piece: the receiver installs the snapshot.
    pub done: bool,
}

/// The pieces of `snapshot`, in order; an empty snapshot is one empty piece.
pub fn pieces(vote: Vote, snapshot: Snapshot) -> impl Iterator<Item = SnapshotChunk> {
    let data = snapshot.snapshot.into_inner();
    let meta = snapshot.meta;
    let count = data.len().div_ceil(SNAPSHOT_CHUNK_BYTES).max(1);
    (0..count).map(move |i| {
        let offset = i * SNAPSHOT_CHUNK_BYTES;
        let end = (offset + SNAPSHOT_CHUNK_BYTES).min(data.len());
        SnapshotChunk {
            vote,
            meta: meta.clone(),
            offset: offset as u64,
            data: data[offset..end].to_vec(),
            done: i + 1 == count,
        }
    })
}

/// The snapshot a follower is receiving, piece by piece.
#[derive(Debug, Default)]
pub struct Assembly {
    under_way: Option<Incoming>,
}

#[derive(Debug)]
struct Incoming {
    from: NodeId,
    vote: Vote,
    meta: SnapshotMeta,
    data: Vec<u8>,
}

impl Assembly {
    /// Checks, without changing anything, that [`Assembly::add`] would
    /// take this piece from node `from`: a piece at offset 0 starts a new
    /// snapshot; any other piece must continue the one under way (same
    /// sender, vote and meta, and the next offset).
    pub fn check(&self, from: NodeId, chunk: &SnapshotChunk) -> Result<(), Status> {
        if chunk.offset == 0 {
            return Ok(());
        }
        let continues = self.under_way.as_ref().is_some_and(|c| {
            c.from == from
                && c.vote == chunk.vote
                && c.meta == chunk.meta
                && c.data.len() as u64 == chunk.offset
        });
        if !continues {
            return Err(Status::failed_precondition(format!(
                "snapshot piece at offset {} does not continue a snapshot under way",
                chunk.offset
            )));
        }
        Ok(())
    }

    /// Adds a piece from node `from`, if [`Assembly::check`] passes. A
    /// piece at offset 0 drops any snapshot under way. Returns the leader's
    /// vote and the whole snapshot with the last piece.
    pub fn add(
        &mut self,
        from: NodeId,
        chunk: SnapshotChunk,
    ) -> Result<Option<(Vote, Snapshot)>, Status> {
        self.check(from, &chunk)?;
        if chunk.offset == 0 {
            self.under_way = Some(Incoming {
                from,
                vote: chunk.vote,
                meta: chunk.meta.clone(),
                data: Vec::new(),
            });
        }
        let Some(current) = self.under_way.as_mut() else {
            return Err(Status::internal("no snapshot under way after its check"));
        };
        current.data.extend_from_slice(&chunk.data);
        if !chunk.done {
            return Ok(None);
        }
        Ok(self.under_way.take().map(|done| {
            let snapshot = Snapshot {
                meta: done.meta,
                snapshot: Cursor::new(done.data),
            };
            (done.vote, snapshot)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(len: usize) -> Snapshot {
        Snapshot {
            meta: SnapshotMeta::default(),
            snapshot: Cursor::new((0..len).map(|i| i as u8).collect()),
        }
    }

    #[test]
    fn pieces_put_back_together_give_the_snapshot() {
        let vote = Vote::new_committed(2, 1);
        for len in [0, 1, SNAPSHOT_CHUNK_BYTES, 2 * SNAPSHOT_CHUNK_BYTES + 5] {
            let sent: Vec<_> = pieces(vote, snapshot(len)).collect();
            assert_eq!(sent.len(), len.div_ceil(SNAPSHOT_CHUNK_BYTES).max(1));
            let mut assembly = Assembly::default();
            let mut whole = None;
            for piece in sent {
                whole = assembly.add(1, piece).unwrap();
            }
            let (got_vote, got) = whole.expect("the last piece completes the snapshot");
            assert_eq!(got_vote, vote);
            assert_eq!(
                got.snapshot.into_inner(),
                snapshot(len).snapshot.into_inner()
            );
        }
    }

    #[test]
    fn a_piece_that_does_not_continue_the_snapshot_is_refused() {
        let vote = Vote::new_committed(2, 1);
        let sent: Vec<_> = pieces(vote, snapshot(3 * SNAPSHOT_CHUNK_BYTES)).collect();
        // A gap.
        let mut assembly = Assembly::default();
        assembly.add(1, sent[0].clone()).unwrap();
        assert!(assembly.add(1, sent[2].clone()).is_err());
        // Another sender's piece.
        let mut assembly = Assembly::default();
        assembly.add(1, sent[0].clone()).unwrap();
        assert!(assembly.add(2, sent[1].clone()).is_err());
        // Another leader's piece.
        let mut assembly = Assembly::default();
        assembly.add(1, sent[0].clone()).unwrap();
        let mut other = sent[1].clone();
        other.vote = Vote::new_committed(3, 2);
        assert!(assembly.add(1, other).is_err());
        // No snapshot under way.
        assert!(Assembly::default().add(1, sent[1].clone()).is_err());
    }
}
