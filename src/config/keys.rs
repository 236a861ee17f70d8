//! The keys a node's settings accept, read off the settings structs' own
//! `Deserialize` (the field names serde asks a deserializer for), so the
//! list an unknown key's error offers is the list `Config` reads: one
//! source, never a copy to keep in step.

use std::sync::OnceLock;

use serde::de::value::Error as ValueError;
use serde::de::{Deserialize, Deserializer, Error as _, Visitor};

use super::ServingConfig;

/// Every key of a settings file, flags and `RAFTLOCK_*` variables (with
/// `_` for `-`), sorted: replication's and the serving layer's.
pub fn all() -> &'static [&'static str] {
    static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut keys: Vec<&'static str> = replication()
            .iter()
            .chain(struct_fields::<ServingConfig>())
            .copied()
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    })
}

/// The keys replication's settings (`raftlock_raft::Config`) read.
pub(super) fn replication() -> &'static [&'static str] {
    struct_fields::<raftlock_raft::Config>()
}

/// Whether `key` is a setting `Config` reads.
pub fn is_known(key: &str) -> bool {
    all().contains(&key)
}

/// The error for an unknown `key`, offering every key there is, and the
/// one it most likely meant (`heartbeat` -> `heartbeat_ms`).
pub(super) fn unknown<E: serde::de::Error>(key: &str) -> E {
    let hint = closest(key)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    let list: Vec<String> = all().iter().map(|k| format!("`{k}`")).collect();
    E::custom(format!(
        "unknown field `{key}`{hint}, expected one of {}",
        list.join(", ")
    ))
}

/// The known key `key` is most likely a slip for: one it begins (a unit
/// left off), or one a few edits away.
fn closest(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase().replace('-', "_");
    if let Some(known) = all().iter().find(|k| **k == key) {
        return Some(known);
    }
    if let Some(known) = all().iter().find(|k| k.starts_with(&format!("{key}_"))) {
        return Some(known);
    }
    let (known, distance) = all()
        .iter()
        .map(|k| (*k, edit_distance(&key, k)))
        .min_by_key(|(_, d)| *d)?;
    (distance <= 2.max(key.len() / 4)).then_some(known)
}

/// Levenshtein distance between `a` and `b`, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The field names `T`'s derived `Deserialize` hands to
/// `deserialize_struct` (after renames); empty for a type that is not a
/// plain struct, which [`Config`]'s tests rule out for ours.
fn struct_fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields = None;
    let _ = T::deserialize(FieldNames(&mut fields));
    fields.unwrap_or_default()
}

/// A deserializer that only records the fields a struct asks for, then
/// stops the deserialization with an error.
struct FieldNames<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ValueError> {
        Err(ValueError::custom("only struct fields are read"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ValueError> {
        *self.0 = Some(fields);
        Err(ValueError::custom("fields read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    /// Every key `Config` writes (each optional one set, so none is left
    /// out) is in the list, and every key in the list but `join_token`
    /// (never written: a secret) is one it writes. The list shown to
    /// someone who mistyped a key is therefore complete; before it came
    /// from one struct alone, it lacked `admin_addr`, `auth_file` and
    /// `lock_delay_ms`, and this test failed on them.
    #[test]
    fn the_key_list_is_every_key_config_reads() {
        let mut config = Config::default();
        let r = &mut config.replication;
        r.advertise_client_addr = Some("a:1".into());
        r.advertise_peer_addr = Some("a:2".into());
        r.tls_cert = Some("c".into());
        r.tls_key = Some("k".into());
        r.tls_ca = Some("ca".into());
        r.join_token_file = Some("t".into());
        config.serving.auth_file = Some("auth.toml".into());
        config.serving.admin_addr = Some("127.0.0.1:9".into());
        let written = toml::Table::try_from(&config).expect("serialize");
        let written: Vec<&str> = written.keys().map(String::as_str).collect();
        for key in &written {
            assert!(is_known(key), "{key} is written but not listed");
        }
        for key in all() {
            assert!(
                written.contains(key) || *key == "join_token",
                "{key} is listed but Config does not write it"
            );
        }
        for key in ["admin_addr", "auth_file", "lock_delay_ms", "heartbeat_ms"] {
            assert!(is_known(key), "{key}");
        }
    }

    /// A slip is matched to the key it most likely meant; nonsense is not.
    #[test]
    fn a_slip_names_the_key_it_meant() {
        assert_eq!(closest("heartbeat"), Some("heartbeat_ms"));
        assert_eq!(closest("admin-addr"), Some("admin_addr"));
        assert_eq!(closest("auth_fiel"), Some("auth_file"));
        assert_eq!(closest("qouta_leases"), Some("quota_leases"));
        assert_eq!(closest("zzz"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    /// A mistyped key is refused with every key offered.
    #[test]
    fn an_unknown_key_names_every_key() {
        let err = toml::from_str::<Config>("lock_delay = 5\n")
            .expect_err("unknown key")
            .to_string();
        assert!(err.contains("unknown field `lock_delay`"), "{err}");
        assert!(err.contains("did you mean `lock_delay_ms`?"), "{err}");
        for key in all() {
            assert!(err.contains(&format!("`{key}`")), "{key} missing: {err}");
        }
    }
}
