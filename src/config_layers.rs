//! A node's settings in layers — defaults, then a TOML file, then overlays
//! such as `raftlock serve`'s `RAFTLOCK_*` variables and flags — merged
//! key by key and read into one [`Config`] by its own `Deserialize`.

use std::collections::BTreeMap;
use std::path::Path;

use raftlock_raft::ConfigError;

use crate::Config;
use serde::Serialize;

/// Settings laid one over another; [`build`](Self::build) reads them into
/// a [`Config`], its defaults under every layer.
///
/// A layer is a table keyed as the TOML file is (`heartbeat_ms`,
/// `initial_cluster`, the `raftlock serve` flags with `_` for `-`); a key
/// of a later layer replaces an earlier one's. Each layer is read alone
/// as a `Config` too, so a key `Config` does not know, or a value of the
/// wrong type, is refused naming the layer that brought it.
///
/// ```no_run
/// # fn demo() -> Result<(), raftlock::ConfigError> {
/// /// What this application lets its own flags set; `None` is not set.
/// #[derive(serde::Serialize)]
/// struct AppFlags {
///     heartbeat_ms: Option<u64>,
///     data_dir: Option<std::path::PathBuf>,
/// }
/// let flags = AppFlags { heartbeat_ms: Some(40), data_dir: None };
/// let config = raftlock::ConfigLayers::default()
///     .file("node.toml".as_ref())?
///     .overlay("flags", &flags)?
///     .build()?;
/// # let _ = config;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConfigLayers {
    /// Every layer's keys, later layers over earlier ones.
    merged: toml::Table,
    /// The name of the layer that set each key last.
    origins: BTreeMap<String, String>,
}

impl ConfigLayers {
    /// Lays the TOML file at `path` over the layers so far. Its mistakes
    /// are reported as `config file PATH: ...`, with the line.
    pub fn file(self, path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::ReadFile {
            path: path.display().to_string(),
            source: raftlock_raft::error::Source::new(e),
        })?;
        self.toml(&format!("config file {}", path.display()), &text)
    }

    /// Lays the settings in `text` (TOML) over the layers so far; `layer`
    /// names them in errors and in [`origin`](Self::origin).
    pub fn toml(self, layer: &str, text: &str) -> Result<Self, ConfigError> {
        let bad = |e: toml::de::Error| layer_error(layer, e);
        // Read as a Config first: its error points at the line.
        toml::from_str::<Config>(text).map_err(bad)?;
        let table: toml::Table = text.parse().map_err(bad)?;
        Ok(self.lay(layer, table))
    }

    /// Lays what `overlay` serializes to over the layers so far: its
    /// fields are keys, and a field that serializes to nothing (`None`, or
    /// one marked `skip_serializing_if`) leaves the key to lower layers.
    pub fn overlay(self, layer: &str, overlay: &impl Serialize) -> Result<Self, ConfigError> {
        let table = toml::Table::try_from(overlay).map_err(|e| layer_error(layer, e))?;
        read_config(&table).map_err(|e| layer_error(layer, e))?;
        Ok(self.lay(layer, table))
    }

    /// The layer that set `key` last; `None` when no layer did (the
    /// default applies).
    pub fn origin(&self, key: &str) -> Option<&str> {
        self.origins.get(key).map(String::as_str)
    }

    /// The config the layers describe, validated. A member of
    /// `initial_cluster` listens where its own entry says unless a layer
    /// names its address (or the address it advertises); named, `validate`
    /// checks they agree.
    pub fn build(&self) -> Result<Config, ConfigError> {
        let mut config = read_config(&self.merged).map_err(|e| layer_error("settings", e))?;
        let named = |key: &str| {
            self.origin(key).is_some() || self.origin(&format!("advertise_{key}")).is_some()
        };
        config
            .replication
            .listen_on_own_entry(!named("client_addr"), !named("peer_addr"));
        config.validate()?;
        Ok(config)
    }

    fn lay(mut self, layer: &str, table: toml::Table) -> Self {
        for (key, value) in table {
            self.origins.insert(key.clone(), layer.to_owned());
            self.merged.insert(key, value);
        }
        self
    }
}

/// The [`Config`] a table of settings describes, defaults for the rest.
fn read_config(table: &toml::Table) -> Result<Config, toml::de::Error> {
    toml::Value::Table(table.clone()).try_into()
}

fn layer_error(layer: &str, e: impl std::error::Error + Send + Sync + 'static) -> ConfigError {
    ConfigError::Layer {
        layer: layer.to_owned(),
        source: raftlock_raft::error::Source::new(e),
    }
}

#[cfg(test)]
mod tests;
