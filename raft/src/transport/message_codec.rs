//! The gRPC codec of both APIs: prost, except that a message that does not
//! decode is `INVALID_ARGUMENT` (the sender's fault, and nothing was done)
//! instead of tonic-prost's `INTERNAL`, which reads as a server bug and
//! which clients retry. Encoding is prost's own.
//!
//! The generated clients use it too, where a reply that does not decode
//! means a server of another version: they see `INVALID_ARGUMENT` with
//! "malformed message" in the text.

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::{ProstCodec, ProstEncoder};

/// prost encoding and a decoder whose errors are `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct MessageCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for MessageCodec<T, U> {
    fn default() -> Self {
        MessageCodec {
            _types: PhantomData,
        }
    }
}

impl<T, U> Codec for MessageCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = MessageDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        MessageDecoder { _type: PhantomData }
    }
}

/// Decodes one `U`; a malformed one is `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct MessageDecoder<U> {
    _type: PhantomData<U>,
}

impl<U: Message + Default> Decoder for MessageDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(|e| {
            Status::invalid_argument(format!(
                "malformed message: not a valid {}: {e}",
                std::any::type_name::<U>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("message")
            ))
        })
    }
}
