//! How many bytes a request takes in an entry, roughly: what the leader's
//! proposer weighs to keep one entry's batch bounded without encoding it.

use super::{
    Acquire, AcquireWithTtl, Cancel, ClaimFire, Command, EndLockDelay, ExpireLeases, ForceRelease,
    GrantLease, Hold, Lead, Proclaim, ReadWrite, Release, Request, RevokeAccountLeases,
    RevokeLease, SetLeaseTtl, Unhold,
};

/// A request's fixed part (ids, caller, time, the command's tag and
/// numbers), rounded up.
const FIXED_BYTES: usize = 128;

impl Request {
    /// The approximate encoded size of this request: its fixed part plus
    /// the names, owners, values and ids it carries.
    pub fn approximate_size(&self) -> usize {
        let variable = match &self.command {
            Command::Acquire(Acquire {
                name, owner, value, ..
            }) => name.len() + owner.len() + value.as_ref().map_or(0, Vec::len),
            Command::Proclaim(Proclaim {
                name, owner, value, ..
            }) => name.len() + owner.len() + value.len(),
            Command::Release(Release { name, owner })
            | Command::Cancel(Cancel { name, owner, .. })
            | Command::AcquireWithTtl(AcquireWithTtl { name, owner, .. })
            | Command::Hold(Hold { name, owner, .. })
            | Command::Unhold(Unhold { name, owner })
            | Command::ReadWrite(ReadWrite { name, owner, .. }) => name.len() + owner.len(),
            Command::Lead(Lead {
                name,
                owner,
                metadata,
                ..
            }) => {
                let pairs: usize = metadata.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
                name.len() + owner.len() + pairs
            }
            Command::ClaimFire(ClaimFire { name, .. }) => name.len(),
            Command::ForceRelease(ForceRelease { name })
            | Command::EndLockDelay(EndLockDelay { name, .. }) => name.len(),
            Command::RevokeAccountLeases(RevokeAccountLeases { account }) => {
                account.to_string().len()
            }
            // postcard writes a u64 in at most 10 bytes.
            Command::ExpireLeases(ExpireLeases { ids }) => ids.len() * 10,
            Command::GrantLease(GrantLease { .. })
            | Command::RevokeLease(RevokeLease { .. })
            | Command::SetLeaseTtl(SetLeaseTtl { .. }) => 0,
        };
        FIXED_BYTES + variable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimate stays at or above the real encoding for the commands
    /// that carry the most, so a batch bounded by it is bounded in bytes
    /// (8 bytes an id fell short of postcard's 10 for large lease ids).
    #[test]
    fn the_estimate_covers_the_encoding() {
        let request = |command| Request {
            origin: None,
            caller: Default::default(),
            time_ms: u64::MAX,
            command,
        };
        let big = "n".repeat(1000);
        for command in [
            Command::Acquire(Acquire {
                name: big.clone(),
                owner: big.clone(),
                lease: u64::MAX,
                mode: crate::Mode::Exclusive,
                wait: true,
                value: Some(vec![7; 4000]),
                lock_delay_ms: u64::MAX,
            }),
            Command::ExpireLeases(ExpireLeases {
                ids: (0..500).map(|i| u64::MAX - i).collect(),
            }),
            Command::ForceRelease(ForceRelease { name: big.clone() }),
        ] {
            let request = request(command);
            let encoded = postcard::to_stdvec(&request).unwrap().len();
            let estimate = request.approximate_size();
            assert!(estimate >= encoded, "{estimate} < {encoded}");
        }
    }
}
