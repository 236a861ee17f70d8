//! A certificate's validity window as the client can tell it: the subject
//! and the not-before / not-after dates of a PEM certificate, whether a
//! moment falls inside them, and those dates in words (UTC, RFC 3339).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The subject and validity dates of one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertValidity {
    /// `CN=...` of the subject, or the whole subject if it has no CN.
    pub subject: String,
    pub not_before: SystemTime,
    pub not_after: SystemTime,
}

/// Where `at` falls relative to a validity window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    NotYetValid,
    Valid,
    Expired,
}

impl CertValidity {
    /// The first certificate of a PEM file (the leaf of a chain); `None`
    /// if there is none or it cannot be parsed (then nothing is claimed
    /// about its dates).
    pub fn from_pem(pem: &[u8]) -> Option<CertValidity> {
        let der = CertificateDer::pem_slice_iter(pem).next()?.ok()?;
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
        let subject = match cert.subject().iter_common_name().next() {
            Some(cn) => format!("CN={}", cn.as_str().ok()?),
            None => cert.subject().to_string(),
        };
        let validity = cert.validity();
        Some(CertValidity {
            subject,
            not_before: from_unix(validity.not_before.timestamp()),
            not_after: from_unix(validity.not_after.timestamp()),
        })
    }

    /// Whether `at` is before, inside or after the window.
    pub fn standing(&self, at: SystemTime) -> Standing {
        if at < self.not_before {
            Standing::NotYetValid
        } else if at > self.not_after {
            Standing::Expired
        } else {
            Standing::Valid
        }
    }
}

/// Seconds since the Unix epoch (negative before it) as a time.
pub(crate) fn from_unix(secs: i64) -> SystemTime {
    match u64::try_from(secs) {
        Ok(after) => UNIX_EPOCH + Duration::from_secs(after),
        Err(_) => UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()),
    }
}

/// `at` in UTC, to the second: `2024-05-01T12:00:00Z`.
pub(crate) fn utc(at: SystemTime) -> String {
    let secs = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("{secs} s after 1970-01-01"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_utc() {
        assert_eq!(utc(from_unix(0)), "1970-01-01T00:00:00Z");
        assert_eq!(utc(from_unix(1_714_564_800)), "2024-05-01T12:00:00Z");
        assert_eq!(utc(from_unix(-86_400)), "1969-12-31T00:00:00Z");
    }

    #[test]
    fn a_moment_is_before_inside_or_after_the_window() {
        let v = CertValidity {
            subject: "CN=x".into(),
            not_before: from_unix(100),
            not_after: from_unix(200),
        };
        assert_eq!(v.standing(from_unix(99)), Standing::NotYetValid);
        assert_eq!(v.standing(from_unix(150)), Standing::Valid);
        assert_eq!(v.standing(from_unix(201)), Standing::Expired);
    }

    #[test]
    fn pem_that_is_no_certificate_claims_nothing() {
        assert_eq!(CertValidity::from_pem(b"not pem"), None);
    }
}
