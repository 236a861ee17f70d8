//! A client's TLS settings: which CA a node's certificate must chain to,
//! and the certificate the client presents when nodes require one.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::error::Error;
use crate::options::SettingNames;

/// TLS settings of a [`Client`](super::Client), as PEM contents (read
/// files with [`ClientTls::from_files`]). Set on
/// [`ClientOptions::tls`](super::ClientOptions::tls), they make the client
/// speak TLS to every endpoint.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// CA certificates (PEM) a node's certificate must chain to. `None`:
    /// the platform's trusted roots (for nodes with publicly issued
    /// certificates).
    pub ca_pem: Option<Vec<u8>>,
    /// The client certificate (PEM) and its private key, presented to
    /// nodes that require client certificates (`--client-cert-auth`).
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// The name every node's certificate must carry, instead of the host of
    /// the endpoint dialled (e.g. `node-1.raftlock` to reach one node by an
    /// address its certificate does not list).
    pub server_name: Option<String>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("ClientTls")
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<set>"))
            .field("identity", &self.identity.as_ref().map(|_| "<set>"))
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl ClientTls {
    /// Reads the CA (`--cacert`) and the client certificate and key
    /// (`--cert`, `--key`; both or neither) from files.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), raftlock_client::Error> {
    /// use std::path::Path;
    /// use raftlock_client::{Client, ClientOptions, ClientTls};
    ///
    /// let tls = ClientTls::from_files(
    ///     Some(Path::new("certs/ca.crt")),
    ///     Some(Path::new("certs/client-app.crt")),
    ///     Some(Path::new("certs/client-app.key")),
    /// )?;
    /// let options = ClientOptions { tls: Some(tls), ..ClientOptions::default() };
    /// let client = Client::connect_with(["127.0.0.1:7379"], options).await?;
    /// # Ok(()) }
    /// ```
    pub fn from_files(
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<ClientTls, Error> {
        Self::from_files_named(&SettingNames::CLI, ca, cert, key)
    }

    /// Like [`from_files`](Self::from_files), with errors that name the
    /// files as `names` does (`cacert=` instead of `--cacert`, say).
    pub fn from_files_named(
        names: &SettingNames,
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<ClientTls, Error> {
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => Some((
                read(Pem::Certificates, names.cert, cert)?,
                read(Pem::Key, names.key, key)?,
            )),
            (None, None) => None,
            (Some(_), None) => {
                return Err(Error::InvalidArgument(format!(
                    "{} needs {} (the client certificate's private key)",
                    names.cert, names.key
                )))
            }
            (None, Some(_)) => {
                return Err(Error::InvalidArgument(format!(
                    "{} needs {} (the client certificate)",
                    names.key, names.cert
                )))
            }
        };
        Ok(ClientTls {
            ca_pem: ca
                .map(|ca| read(Pem::Certificates, names.cacert, ca))
                .transpose()?,
            identity,
            server_name: None,
        })
    }

    /// tonic's settings for these.
    pub(crate) fn config(&self) -> ClientTlsConfig {
        let mut config = ClientTlsConfig::new();
        config = match &self.ca_pem {
            Some(ca) => config.ca_certificate(Certificate::from_pem(ca)),
            None => config.with_native_roots(),
        };
        if let Some((cert, key)) = &self.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        if let Some(name) = &self.server_name {
            config = config.domain_name(name.clone());
        }
        config
    }
}

/// What a PEM file must hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pem {
    Certificates,
    Key,
}

/// Reads a PEM file and checks it holds what `setting` (named as the
/// front end names it) needs.
fn read(holds: Pem, setting: &str, path: &Path) -> Result<Vec<u8>, Error> {
    let pem = std::fs::read(path)
        .map_err(|e| Error::Tls(format!("cannot read {setting} {}: {e}", path.display())))?;
    let parsed = match holds {
        Pem::Key => PrivateKeyDer::from_pem_slice(&pem)
            .map(|_| ())
            .map_err(|e| format!("no usable private key: {e}")),
        Pem::Certificates => {
            match CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>() {
                Ok(certs) if !certs.is_empty() => Ok(()),
                Ok(_) => Err("no CERTIFICATE in this PEM file".to_string()),
                Err(e) => Err(format!("bad PEM: {e}")),
            }
        }
    };
    parsed.map_err(|e| Error::Tls(format!("{setting} {}: {e}", path.display())))?;
    Ok(pem)
}
