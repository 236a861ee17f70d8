//! Golden bytes: every [`Command`] variant encodes exactly as the logs and
//! snapshots already on disk hold it. The vectors were captured from the
//! build before the variants became newtypes over named structs; postcard
//! encodes a newtype variant of a struct like the struct variant, and this
//! test proves it. A change here breaks every stored log.

use super::*;

/// One value of every variant (and of every [`Mode`], [`ReadWriteOp`] and
/// [`Account`] kind), in [`GOLDEN`]'s order.
fn every_command() -> Vec<Command> {
    let claim = Claim {
        client: Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        seq: 7,
        attempt: 2,
    };
    vec![
        Command::GrantLease(GrantLease { ttl_ms: 30_000 }),
        Command::RevokeLease(RevokeLease { id: 0x1_0002 }),
        Command::ExpireLeases(ExpireLeases {
            ids: vec![1, 300, u64::MAX],
        }),
        Command::Acquire(Acquire {
            name: "jobs/a".into(),
            owner: "o1".into(),
            lease: 65_536,
            mode: Mode::Exclusive,
            wait: true,
            value: None,
            lock_delay_ms: 0,
        }),
        Command::Acquire(Acquire {
            name: "e".into(),
            owner: "o2".into(),
            lease: 3,
            mode: Mode::Shared,
            wait: false,
            value: Some(vec![1, 2, 3]),
            lock_delay_ms: 1500,
        }),
        Command::Acquire(Acquire {
            name: "sem".into(),
            owner: "o3".into(),
            lease: 4,
            mode: Mode::Permits { count: 2, limit: 5 },
            wait: true,
            value: None,
            lock_delay_ms: 7,
        }),
        Command::Release(Release {
            name: "jobs/a".into(),
            owner: "o1".into(),
        }),
        Command::Cancel(Cancel {
            name: "n".into(),
            owner: "o".into(),
            call: None,
        }),
        Command::Cancel(Cancel {
            name: "n".into(),
            owner: "o".into(),
            call: Some(claim),
        }),
        Command::ForceRelease(ForceRelease { name: "n".into() }),
        Command::EndLockDelay(EndLockDelay {
            name: "n".into(),
            since: 0x5_0001,
        }),
        Command::Proclaim(Proclaim {
            name: "e".into(),
            owner: "o".into(),
            value: vec![9, 8],
        }),
        Command::SetLeaseTtl(SetLeaseTtl {
            id: 12,
            ttl_ms: 2_000,
        }),
        Command::AcquireWithTtl(AcquireWithTtl {
            name: "n".into(),
            owner: "o".into(),
            ttl_ms: 10_000,
            mode: Mode::Exclusive,
            lock_delay_ms: 250,
        }),
        Command::RevokeAccountLeases(RevokeAccountLeases {
            account: Account::Identity("alice".into()),
        }),
        Command::RevokeAccountLeases(RevokeAccountLeases {
            account: Account::source("10.1.2.3".parse().expect("an address")),
        }),
        Command::Hold(Hold {
            name: "n".into(),
            owner: "o".into(),
            ttl_ms: 5_000,
        }),
        Command::Unhold(Unhold {
            name: "n".into(),
            owner: "o".into(),
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw".into(),
            owner: "o".into(),
            op: ReadWriteOp::Read { ttl_ms: 1 },
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw".into(),
            owner: "o".into(),
            op: ReadWriteOp::Write {
                ttl_ms: 2,
                intent: true,
            },
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw".into(),
            owner: "o".into(),
            op: ReadWriteOp::ReleaseRead,
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw".into(),
            owner: "o".into(),
            op: ReadWriteOp::ReleaseWrite,
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw".into(),
            owner: "o".into(),
            op: ReadWriteOp::CancelIntent,
        }),
        Command::ReadWrite(ReadWrite {
            name: "rw".into(),
            owner: "o".into(),
            op: ReadWriteOp::Downgrade { ttl_ms: 3 },
        }),
        Command::Lead(Lead {
            name: "lead".into(),
            owner: "o".into(),
            ttl_ms: 9_000,
            metadata: vec![("k".into(), "v".into()), ("host".into(), "a".into())],
        }),
        Command::ClaimFire(ClaimFire {
            name: "cron".into(),
            due: 1.5f64.to_bits(),
        }),
    ]
}

/// Captured with `postcard::to_stdvec` from the struct-variant build (8b62f47).
#[rustfmt::skip]
const GOLDEN: &[&[u8]] = &[
    &[0, 176, 234, 1],
    &[1, 130, 128, 4],
    &[2, 3, 1, 172, 2, 255, 255, 255, 255, 255, 255, 255, 255, 255, 1],
    &[3, 6, 106, 111, 98, 115, 47, 97, 2, 111, 49, 128, 128, 4, 0, 1, 0, 0],
    &[3, 1, 101, 2, 111, 50, 3, 1, 0, 1, 3, 1, 2, 3, 220, 11],
    &[3, 3, 115, 101, 109, 2, 111, 51, 4, 2, 2, 5, 1, 0, 7],
    &[4, 6, 106, 111, 98, 115, 47, 97, 2, 111, 49],
    &[5, 1, 110, 1, 111, 0],
    &[5, 1, 110, 1, 111, 1, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 7, 2],
    &[6, 1, 110],
    &[7, 1, 110, 129, 128, 20],
    &[8, 1, 101, 1, 111, 2, 9, 8],
    &[9, 12, 208, 15],
    &[10, 1, 110, 1, 111, 144, 78, 0, 250, 1],
    &[11, 0, 5, 97, 108, 105, 99, 101],
    &[11, 1, 0, 10, 1, 2, 3],
    &[12, 1, 110, 1, 111, 136, 39],
    &[13, 1, 110, 1, 111],
    &[14, 2, 114, 119, 1, 111, 0, 1],
    &[14, 2, 114, 119, 1, 111, 1, 2, 1],
    &[14, 2, 114, 119, 1, 111, 2],
    &[14, 2, 114, 119, 1, 111, 3],
    &[14, 2, 114, 119, 1, 111, 4],
    &[14, 2, 114, 119, 1, 111, 5, 3],
    &[15, 4, 108, 101, 97, 100, 1, 111, 168, 70, 2, 1, 107, 1, 118, 4, 104, 111, 115, 116, 1, 97],
    &[16, 4, 99, 114, 111, 110, 128, 128, 128, 128, 128, 128, 128, 252, 63],
];

#[test]
fn every_command_encodes_as_the_stored_logs_hold_it() {
    let values = every_command();
    let encoded: Vec<Vec<u8>> = values
        .iter()
        .map(|c| postcard::to_stdvec(c).expect("a command encodes"))
        .collect();
    assert_eq!(encoded.len(), GOLDEN.len(), "one golden vector per value");
    for ((value, bytes), golden) in values.iter().zip(&encoded).zip(GOLDEN) {
        assert_eq!(bytes.as_slice(), *golden, "{value:?} encodes unchanged");
        let decoded: Command = postcard::from_bytes(golden).expect("a golden vector decodes");
        assert_eq!(&decoded, value, "{golden:?} decodes unchanged");
    }
}
