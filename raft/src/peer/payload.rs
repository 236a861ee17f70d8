//! The payload of every peer message: postcard, inside the envelope the
//! guard seals ([`Blob`](crate::pb::Blob)). The peer API is internal, so
//! both ends run one build's types.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Serializes a peer message's payload.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_stdvec(msg)
}

/// Deserializes a peer message's payload.
pub fn decode<T: DeserializeOwned>(data: &[u8]) -> Result<T, postcard::Error> {
    postcard::from_bytes(data)
}
