//! `config.toml`: the workspace's policy and limits. Unknown keys are an error,
//! so a typo never silently falls back to a default.

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub limits: LimitsConfig,
    pub locks: LocksConfig,
    pub query: QueryConfig,
    pub import: ImportConfig,
    pub store: StoreConfig,
}

/// Where published evidence lives: this folder (the default), or an
/// object-store prefix shared by every workspace initialized on it
/// (`flameox init --store s3://bucket/prefix`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `s3://`, `gs://` or `az://` URL of the shared prefix; empty = local.
    pub url: String,
}

impl StoreConfig {
    /// The shared prefix, or `None` for a local workspace.
    pub fn shared_url(&self) -> Option<&str> {
        Some(self.url.trim()).filter(|url| !url.is_empty())
    }
}

/// Row limits of every paged result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    pub default_rows: usize,
    pub max_rows: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocksConfig {
    /// How long a publisher waits for `write.lock` before `WRITE_LOCK_TIMEOUT`.
    pub write_timeout_ms: u64,
}

/// Budgets every query runs under (lowerable per call, never raised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueryConfig {
    pub memory_limit_mib: u64,
    pub timeout_ms: u64,
    /// `df://host:port` of a Ballista scheduler that runs the recipes
    /// (needs a shared store and a build with the `cluster` feature);
    /// empty = in this process. `--cluster` overrides it per command.
    pub cluster: String,
}

/// Input limits: decompression bombs fail with `ARTIFACT_TOO_LARGE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImportConfig {
    pub max_decompression_ratio: u64,
    pub min_decompressed_cap_mib: u64,
    /// Trace events held in memory during an import (about 130 bytes
    /// each); a trace with more is nested and sorted through spill runs in
    /// the staging folder: bounded memory, 1.1–1.3× the time of holding it.
    /// Perfetto also holds at most 4× this many callstack samples and 2×
    /// this many ftrace records and counter values.
    pub events_in_memory: u64,
    /// Longest an import may run (seconds); `--timeout` lowers it per call.
    /// Past it the import stops, nothing is published, exit 8.
    pub timeout_seconds: u64,
    /// Most objects one `s3://…/prefix/` (or `gs://`, `az://`) import may
    /// fetch; a larger prefix is refused before a byte is read.
    pub max_remote_objects: u64,
    /// How many of one import's inputs (the rank files of a folder or
    /// prefix, several paths) are stored and extracted at once; 0 = one
    /// per core, at most 8. They share `events_in_memory`.
    pub parallel_inputs: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            default_rows: 20,
            max_rows: 1000,
        }
    }
}

impl Default for LocksConfig {
    fn default() -> Self {
        LocksConfig {
            write_timeout_ms: 30_000,
        }
    }
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            memory_limit_mib: 2048,
            timeout_ms: 60_000,
            cluster: String::new(),
        }
    }
}

impl Default for ImportConfig {
    fn default() -> Self {
        ImportConfig {
            max_decompression_ratio: 500,
            min_decompressed_cap_mib: 1024,
            events_in_memory: flameox_extractors::api::DEFAULT_SPILL_AFTER_EVENTS as u64,
            timeout_seconds: 3600,
            max_remote_objects: 10_000,
            parallel_inputs: 0,
        }
    }
}

impl Config {
    /// Parses and checks a `config.toml` text.
    pub fn parse(text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text).map_err(|e| {
            FlameoxError::new(
                ErrorCode::InvalidArguments,
                format!("config.toml is invalid: {e}"),
            )
            .remedy("fix or remove the named key in .flameox/config.toml")
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<()> {
        let bad = |field: &str, problem: &str| Err(FlameoxError::invalid_argument(field, problem));
        if self.limits.max_rows == 0 || self.limits.max_rows > 1000 {
            return bad("limits.max_rows", "must be in 1..=1000");
        }
        if self.limits.default_rows == 0 || self.limits.default_rows > self.limits.max_rows {
            return bad("limits.default_rows", "must be in 1..=limits.max_rows");
        }
        if self.query.memory_limit_mib == 0 || self.query.timeout_ms == 0 {
            return bad("query", "budgets must be positive");
        }
        if self.import.max_decompression_ratio == 0 {
            return bad("import.max_decompression_ratio", "must be positive");
        }
        if self.import.events_in_memory == 0 {
            return bad("import.events_in_memory", "must be positive");
        }
        if self.import.timeout_seconds == 0 {
            return bad("import.timeout_seconds", "must be positive");
        }
        if !self.query.cluster.trim().is_empty() {
            crate::cluster::scheduler_url(self.query.cluster.trim())?;
        }
        let url = self.store.url.as_str();
        if !url.is_empty()
            && ![
                "s3://", "s3a://", "gs://", "az://", "abfs://", "abfss://", "azure://",
            ]
            .iter()
            .any(|scheme| url.starts_with(scheme))
        {
            return bad(
                "store.url",
                "must be an s3://, gs:// or az:// prefix (or empty for a local workspace)",
            );
        }
        Ok(())
    }

    /// The TOML text `flameox init` writes.
    pub fn default_toml() -> String {
        let body = toml::to_string_pretty(&Config::default()).unwrap_or_default();
        format!("# flameox workspace policy and limits. Unknown keys are an error.\n\n{body}")
    }

    /// Checks a requested row limit against the configured range.
    pub fn row_limit(&self, requested: Option<usize>) -> Result<usize> {
        match requested {
            None => Ok(self.limits.default_rows),
            Some(n) if n >= 1 && n <= self.limits.max_rows => Ok(n),
            Some(n) => Err(FlameoxError::invalid_argument(
                "limit",
                format!("{n} is outside 1..={}", self.limits.max_rows),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_text_round_trips_and_unknown_keys_fail() {
        let parsed = Config::parse(&Config::default_toml()).unwrap();
        assert_eq!(parsed, Config::default());
        let err = Config::parse("[limits]\nmax_rowz = 5\n").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        assert!(err.message.contains("max_rowz"));
    }

    #[test]
    fn row_limits_are_bounded() {
        let config = Config::default();
        assert_eq!(config.row_limit(None).unwrap(), 20);
        assert_eq!(config.row_limit(Some(1000)).unwrap(), 1000);
        assert!(config.row_limit(Some(0)).is_err());
        assert!(config.row_limit(Some(1001)).is_err());
    }
}
