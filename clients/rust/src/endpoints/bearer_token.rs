//! The bearer token every call carries, as gRPC metadata.

use tonic::metadata::AsciiMetadataValue;
use tonic::service::Interceptor;
use tonic::Status;

use crate::error::Error;

/// Adds `authorization: Bearer TOKEN` to every call (or nothing).
#[derive(Debug, Clone)]
pub struct BearerToken(Option<AsciiMetadataValue>);

impl BearerToken {
    pub(super) fn new(token: Option<&str>) -> Result<Self, Error> {
        let Some(token) = token else {
            return Ok(BearerToken(None));
        };
        let token = token.trim();
        if token.is_empty() {
            return Err(Error::InvalidArgument("the token is empty".into()));
        }
        let mut value: AsciiMetadataValue = format!("Bearer {token}")
            .parse()
            .map_err(|_| Error::InvalidArgument("a token must be printable ASCII".into()))?;
        value.set_sensitive(true);
        Ok(BearerToken(Some(value)))
    }
}

impl Interceptor for BearerToken {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(value) = &self.0 {
            req.metadata_mut().insert("authorization", value.clone());
        }
        Ok(req)
    }
}
