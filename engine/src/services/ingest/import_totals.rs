//! What a multi-artifact run says as a whole: summed rows and bytes, the
//! union of time spans, coverage true in every artifact, limitations merged
//! by code, and the producer metadata all artifacts share (plus their
//! ranks). With one artifact every total is simply that artifact's.

use std::collections::BTreeMap;

use flameox_extractors::Limitation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One artifact of an import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedArtifact {
    pub artifact_id: String,
    /// File or folder name it was imported from.
    pub original_name: String,
    pub kind: String,
    pub producer: String,
    pub bytes: u64,
    #[serde(default)]
    pub generation_id: String,
    #[serde(default)]
    pub reused_generation: bool,
    pub rows: BTreeMap<String, u64>,
    #[serde(default)]
    pub time_span_ns: Option<(i64, i64)>,
    #[serde(default)]
    pub tracks: u64,
    #[serde(default)]
    pub coverage: BTreeMap<String, bool>,
    #[serde(default)]
    pub limitations: Vec<Limitation>,
    /// Producer metadata of this artifact (e.g. `distributedInfo`).
    pub metadata: BTreeMap<String, Value>,
}

/// Run-level totals over the artifacts of one import.
pub struct RunTotals {
    pub kind: String,
    pub producer: String,
    pub bytes: u64,
    pub rows: BTreeMap<String, u64>,
    pub time_span_ns: Option<(i64, i64)>,
    pub tracks: u64,
    pub coverage: BTreeMap<String, bool>,
    pub limitations: Vec<Limitation>,
    pub reused_generation: bool,
    pub metadata: BTreeMap<String, Value>,
}

/// The one value every item has, else `mixed`.
fn common(values: impl Iterator<Item = String>) -> String {
    let mut values = values.peekable();
    let first = values.next().unwrap_or_default();
    if values.all(|v| v == first) {
        first
    } else {
        "mixed".to_owned()
    }
}

/// `distributedInfo.rank` of a Kineto artifact, if recorded.
pub fn rank_of(metadata: &BTreeMap<String, Value>) -> Option<i64> {
    metadata.get("distributedInfo")?.get("rank")?.as_i64()
}

impl RunTotals {
    pub fn of(artifacts: &[ImportedArtifact]) -> RunTotals {
        let mut rows: BTreeMap<String, u64> = BTreeMap::new();
        let mut limitations: Vec<Limitation> = Vec::new();
        let mut coverage: BTreeMap<String, bool> = BTreeMap::new();
        for a in artifacts {
            for (table, n) in &a.rows {
                *rows.entry(table.clone()).or_insert(0) += n;
            }
            for l in &a.limitations {
                match limitations.iter_mut().find(|m| m.code == l.code) {
                    Some(m) => m.count += l.count,
                    None => limitations.push(l.clone()),
                }
            }
            for key in a.coverage.keys() {
                coverage.insert(key.clone(), true);
            }
        }
        for (key, flag) in coverage.iter_mut() {
            *flag = artifacts
                .iter()
                .all(|a| a.coverage.get(key).copied().unwrap_or(false));
        }
        let time_span_ns = artifacts
            .iter()
            .filter_map(|a| a.time_span_ns)
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
        RunTotals {
            kind: common(artifacts.iter().map(|a| a.kind.clone())),
            producer: common(artifacts.iter().map(|a| a.producer.clone())),
            bytes: artifacts.iter().map(|a| a.bytes).sum(),
            rows,
            time_span_ns,
            tracks: artifacts.iter().map(|a| a.tracks).sum(),
            coverage,
            limitations,
            reused_generation: artifacts.iter().all(|a| a.reused_generation),
            metadata: run_metadata(artifacts),
        }
    }
}

/// One artifact: its metadata. Several: the entries equal in all of them,
/// `artifact_count`, and `ranks` (per artifact, in order) when any artifact
/// carries `distributedInfo.rank`.
fn run_metadata(artifacts: &[ImportedArtifact]) -> BTreeMap<String, Value> {
    let [first, rest @ ..] = artifacts else {
        return BTreeMap::new();
    };
    if rest.is_empty() {
        return first.metadata.clone();
    }
    let mut out: BTreeMap<String, Value> = first
        .metadata
        .iter()
        .filter(|(k, v)| rest.iter().all(|a| a.metadata.get(*k) == Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.insert("artifact_count".to_owned(), json!(artifacts.len()));
    let ranks: Vec<Option<i64>> = artifacts.iter().map(|a| rank_of(&a.metadata)).collect();
    if ranks.iter().any(Option::is_some) {
        out.insert("ranks".to_owned(), json!(ranks));
    }
    out
}
