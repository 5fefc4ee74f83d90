//! The typed shape of `flameox.toml`: `[workloads.<name>]` and
//! `[experiments.<name>]`. Every struct denies unknown keys, so a typo is an
//! error rather than a silently ignored setting. Semantic rules (placeholders,
//! shells, paths, ranges) live in `super::validate`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The whole project configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workloads: BTreeMap<String, WorkloadDef>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub experiments: BTreeMap<String, ExperimentDef>,
    /// Third-party capture adapters: an installed program run around the
    /// workload, usable once `prepare_adapter` approved its exact identity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub adapters: BTreeMap<String, AdapterDef>,
}

/// A third-party capture adapter declared in `[adapters.<name>]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterDef {
    /// The installed program it runs (a name on PATH, or an absolute path).
    pub program: String,
    /// What runs: `{program}` (the resolved program), `{profile}` (the
    /// profile's path in the capture folder) and `{argv}` (the workload's
    /// argv, spliced in as separate arguments; exactly once).
    pub command: Vec<String>,
    /// File name of the profile the program writes.
    pub profile: String,
    /// Format the profile is imported as (default: detected by content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The Python distribution that installed the program, when it is one:
    /// its version and files join the identity prepare_adapter approves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
}

/// A parameter choice: a plain TOML/JSON scalar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for Scalar {
    /// The text a `{param}` placeholder is replaced with.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Str(s) => f.write_str(s),
        }
    }
}

impl Scalar {
    /// A JSON scalar as a choice (`None` for arrays, objects and null).
    pub fn from_json(value: &serde_json::Value) -> Option<Scalar> {
        use serde_json::Value;
        match value {
            Value::Bool(b) => Some(Scalar::Bool(*b)),
            Value::Number(n) => n
                .as_i64()
                .map(Scalar::Int)
                .or_else(|| n.as_f64().map(Scalar::Float)),
            Value::String(s) => Some(Scalar::Str(s.clone())),
            _ => None,
        }
    }
}

/// `[workloads.<name>]`: one runnable program, never a shell string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadDef {
    /// Program and arguments; `{param}` placeholders of declared parameters
    /// (`{{` / `}}` for literal braces). argv[0] takes no placeholder.
    pub argv: Vec<String>,
    /// Project-relative working folder (default the project root).
    #[serde(default = "default_cwd")]
    pub cwd: String,
    /// Wall-clock limit; the process tree is killed past it.
    pub timeout_seconds: f64,
    /// Parameter name → allowed choices (the first is the default).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, Vec<Scalar>>,
    /// Variables added to the filtered child environment (placeholders allowed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleDef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirements: Option<Requirements>,
    /// Project-relative paths the workload is declared to write (recorded;
    /// not enforced: there is no containment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityDef>,
    /// Files the workload writes that are imported into its run afterwards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, OutputDecl>,
}

fn default_cwd() -> String {
    ".".to_owned()
}

/// How a run's result is judged beyond "it exited".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OracleDef {
    /// Exit codes that count as success (default `[0]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_codes: Option<Vec<i32>>,
    /// Text the captured stdout must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_contains: Option<String>,
}

/// What must be present before the workload can run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirements {
    /// Programs that must be found on PATH (or absolute paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executables: Vec<String>,
    /// Python distributions the workload imports (reported, not installed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub python_distributions: Vec<String>,
}

/// What the program is, pinned so a changed binary is noticed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityDef {
    /// sha256 (64 lowercase hex digits) the resolved argv[0] must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_sha256: Option<String>,
    /// Free text for people (e.g. a version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `[workloads.<name>.outputs.<output>]`: a file the run writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputDecl {
    /// Project-relative path (placeholders allowed).
    pub path: String,
    /// Format kind to import it as (default `auto`: detect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A missing required output fails the capture (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// `[experiments.<name>]`: validated now, executed by the experiment runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentDef {
    pub workload: String,
    /// Named variants, each a set of parameter overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variants: Option<BTreeMap<String, BTreeMap<String, Scalar>>>,
    /// Factors: parameter → the levels crossed in full (instead of variants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factors: Option<BTreeMap<String, Vec<Scalar>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<ScalingDef>,
    /// Randomized complete blocks: every cell once per block.
    pub repetitions: u32,
    /// Untimed runs per cell before the blocks (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmups: Option<u32>,
    /// Seed of the within-block order.
    pub seed: u64,
    /// Measurement name compared (`wall_time`, `cpu_time`, `peak_rss`, …).
    pub primary_metric: String,
    pub polarity: Polarity,
    /// Smallest relative change that matters (0.05 = 5 %).
    pub practical_threshold: f64,
    /// Confidence level of intervals, in (0.5, 1).
    pub confidence_level: f64,
    /// Budget of trials (default: the full matrix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<u32>,
}

/// The scaling parameter and the values it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalingDef {
    pub parameter: String,
    pub values: Vec<Scalar>,
}

/// Which direction of the primary metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Polarity {
    LowerIsBetter,
    HigherIsBetter,
}
