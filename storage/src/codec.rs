//! How raftlock frames what it stores: a format byte, a CRC32C of the
//! payload, then the payload. Records (log entries, vote, markers) are
//! postcard; snapshot bytes are framed as they are.
//!
//! The checksum is verified on every read, so a flipped bit in a stored
//! record is an error naming the record, never a silently different value.
//! The format byte lets a build refuse data written in a format it does not
//! read (earlier builds stored JSON, whose first byte is `{`, `"`, `n` or a
//! digit — never [`FORMAT`]).

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Error;

/// The record format this build writes and reads. Raised whenever a stored
/// record changes shape, so that an older data dir is refused rather than
/// misread. 3: remembered replies carry their command's fingerprint, leases
/// the client that granted them, request ids the `anonymous` flag. 4:
/// requests carry their caller, leases the identity that granted them. 5:
/// acquires, holds and waits carry a lock-delay, locks the delay in force.
/// 6: callers carry their source address, entries the leader's quotas,
/// leases their account, sessions are keyed by account and client id.
pub const FORMAT: u8 = 6;

/// The format before [`FORMAT`]: backups in it are still read
/// ([`decode_previous`]), data dirs are not.
pub(crate) const PREVIOUS_FORMAT: u8 = FORMAT - 1;

/// Format byte plus CRC32C.
const HEADER_LEN: usize = 5;

/// Frames `payload`: format byte, CRC32C (little-endian), payload.
pub(crate) fn seal(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.push(FORMAT);
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Checks the frame of a stored `what` and returns its payload.
pub(crate) fn unseal<'a>(what: &str, bytes: &'a [u8]) -> Result<&'a [u8], Error> {
    unseal_as(what, bytes, FORMAT)
}

/// [`unseal`] for a record in `expected` format.
fn unseal_as<'a>(what: &str, bytes: &'a [u8], expected: u8) -> Result<&'a [u8], Error> {
    let Some((&format, rest)) = bytes.split_first() else {
        return Err(Error::corrupt(what, "empty record"));
    };
    if format != expected {
        return Err(Error::Format {
            what: what.to_string(),
            found: format,
            reads: FORMAT,
        });
    }
    if rest.len() < HEADER_LEN - 1 {
        return Err(Error::corrupt(
            what,
            format!("record of {} bytes", bytes.len()),
        ));
    }
    let (crc, payload) = rest.split_at(HEADER_LEN - 1);
    let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let computed = crc32c::crc32c(payload);
    if stored != computed {
        return Err(Error::Checksum {
            what: what.to_string(),
            stored,
            computed,
        });
    }
    Ok(payload)
}

/// Encodes `value` (postcard) and frames it.
pub(crate) fn encode<T: Serialize + ?Sized>(what: &str, value: &T) -> Result<Vec<u8>, Error> {
    let payload = postcard::to_stdvec(value).map_err(|e| Error::encode(what, e))?;
    Ok(seal(&payload))
}

/// Checks the frame of a stored `what` and decodes its payload.
pub(crate) fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, Error> {
    let payload = unseal(what, bytes)?;
    postcard::from_bytes(payload).map_err(|e| Error::decode(what, e))
}

/// The format byte of a framed record, if any.
pub(crate) fn format_of(bytes: &[u8]) -> Option<u8> {
    bytes.first().copied()
}

/// Decodes a record framed in [`PREVIOUS_FORMAT`] as `T`, the type that
/// format encoded.
pub(crate) fn decode_previous<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, Error> {
    let payload = unseal_as(what, bytes, PREVIOUS_FORMAT)?;
    postcard::from_bytes(payload).map_err(|e| Error::decode(what, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips() {
        let bytes = encode("x", &(7u64, "seven".to_string())).expect("encodes");
        let back: (u64, String) = decode("x", &bytes).expect("decodes");
        assert_eq!(back, (7, "seven".to_string()));
    }

    #[test]
    fn every_flipped_bit_is_caught() {
        let bytes = encode("x", &(7u64, vec![1u8, 2, 3])).expect("encodes");
        for i in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(
                decode::<(u64, Vec<u8>)>("x", &bad).is_err(),
                "flipping bit {i} went unnoticed"
            );
        }
    }

    #[test]
    fn a_truncated_record_is_refused() {
        let bytes = encode("x", &42u32).expect("encodes");
        for len in 0..bytes.len() {
            assert!(decode::<u32>("x", &bytes[..len]).is_err(), "length {len}");
        }
    }

    #[test]
    fn a_record_of_the_previous_format_is_refused() {
        let mut bytes = encode("x", &7u64).expect("encodes");
        bytes[0] = FORMAT - 1;
        let err = decode::<u64>("x", &bytes).expect_err("an older format is refused");
        assert!(
            matches!(err, Error::Format { found, .. } if found == FORMAT - 1),
            "{err}"
        );
        assert!(
            err.to_string().contains("another raftlock version"),
            "{err}"
        );
        // The way forward: a backup of it restores into this build.
        assert!(
            err.to_string().contains("`raftlock snapshot restore`"),
            "{err}"
        );
        bytes[0] = FORMAT - 2;
        let older = decode::<u64>("x", &bytes).expect_err("an older format is refused");
        assert!(!older.to_string().contains("snapshot restore"), "{older}");
    }

    #[test]
    fn json_from_an_earlier_build_is_named_as_another_format() {
        let err = decode::<u64>("vote", br#"{"term":1}"#).expect_err("json is refused");
        assert!(matches!(err, Error::Format { found: b'{', .. }), "{err}");
    }
}
