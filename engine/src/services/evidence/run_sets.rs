//! Run sets: a frozen, immutable list of runs that `analyze compare` and
//! `analyze scaling` read — each member with its variant, parameters and
//! block key — chosen by a selection (explicit run ids and/or `--variant`,
//! `--param k=v` filters) and stored as `records/run_sets/<id>.json`.
//!
//! The id is `rs_` + 32 hex digits of the digest of the members and the
//! selection, so freezing the same runs again returns the same record.
//! A run id given where a run set is expected is a one-element run set
//! (made on the fly, not stored).
//!
//! Block keys (how `compare` pairs runs): an experiment's block index when
//! the member carries one (experiments will freeze their sets with it);
//! else the run's `block` parameter; else the member's position in run-id
//! (creation) order. The set records which one it used (`pairing_key`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{FlameoxError, Result};
use crate::fsutil::{canonical_json, now_rfc3339, sha256_hex};
use crate::records::{self, RECORD_SCHEMA_VERSION, RecordKind};
use crate::runs::{self, Collector, RunManifest, RunStatus};
use crate::workspace::Workspace;

/// The parameter that names a run's block when no experiment assigned one.
pub const BLOCK_PARAMETER: &str = "block";
const RUN_SET_PREFIX: &str = "rs_";

/// Which runs to freeze: explicit ids, filtered by variant and parameters
/// (all given filters must match; with no ids, every run is a candidate).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSelection {
    /// Runs to include.
    #[serde(default)]
    #[schemars(length(max = 1000), inner(length(min = 1, max = 200)))]
    pub run_ids: Vec<String>,
    /// Only runs of this variant.
    #[schemars(length(min = 1, max = 64))]
    pub variant: Option<String>,
    /// Only runs with these parameter values.
    #[serde(default)]
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: BTreeMap<String, String>,
}

/// Where a set's block keys come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingKey {
    ExperimentBlock,
    BlockParameter,
    RunOrder,
}

/// One run of a set, with what pairing and compatibility checks need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSetMember {
    pub run_id: String,
    pub run_type: String,
    pub variant: Option<String>,
    pub parameters: BTreeMap<String, String>,
    /// The pairing key (see `pairing_key` of the set).
    pub block: String,
    /// The experiment's block index, when an experiment made the run.
    pub block_index: Option<u64>,
    pub trial_id: Option<String>,
    pub status: RunStatus,
    pub failed: bool,
    pub collector: Option<Collector>,
    pub workload_definition: Option<String>,
    pub environment_id: Option<String>,
    pub source_state_id: Option<String>,
}

/// `records/run_sets/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSetRecord {
    pub schema_version: u32,
    pub run_set_id: String,
    /// sha256 of the canonical JSON of `selection`, `pairing_key`, `members`.
    pub digest: String,
    pub created_at: String,
    pub selection: RunSelection,
    pub pairing_key: PairingKey,
    pub variants: Vec<String>,
    pub members: Vec<RunSetMember>,
}

/// What `runs freeze` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreezeResult {
    /// False when the same set was frozen before (the stored record is returned).
    pub created: bool,
    pub run_set: RunSetRecord,
}

/// A run set as an analysis reads it: stored, or one run on the fly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedRunSet {
    pub requested: String,
    pub run_set_id: Option<String>,
    pub pairing_key: PairingKey,
    pub members: Vec<RunSetMember>,
}

/// Whether a run failed (execution, extraction or validation).
pub fn run_failed(status: &RunStatus) -> bool {
    matches!(
        status.execution.as_str(),
        "failed" | "timed_out" | "cancelled" | "interrupted"
    ) || matches!(
        status.extraction.as_str(),
        "failed" | "interrupted" | "cancelled"
    ) || status.validation == "failed"
}

fn metadata_text(run: &RunManifest, key: &str) -> Option<String> {
    run.metadata
        .get(key)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// A member from a run manifest; `block` is filled by [`assign_blocks`].
pub fn member_of(run: &RunManifest) -> RunSetMember {
    RunSetMember {
        run_id: run.run_id.clone(),
        run_type: run.run_type.clone(),
        variant: run.variant.clone(),
        parameters: run.parameters.clone(),
        block: String::new(),
        block_index: run.metadata.get("block_index").and_then(|v| v.as_u64()),
        trial_id: metadata_text(run, "trial_id"),
        status: run.status.clone(),
        failed: run_failed(&run.status),
        collector: run.collector.clone(),
        workload_definition: metadata_text(run, "definition_hash"),
        environment_id: metadata_text(run, "environment_id"),
        source_state_id: metadata_text(run, "source_state_id"),
    }
}

/// Orders members by run id (creation time) and gives each its block key.
pub fn assign_blocks(members: &mut [RunSetMember]) -> PairingKey {
    members.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    let key = if members.iter().all(|m| m.block_index.is_some()) {
        PairingKey::ExperimentBlock
    } else if members
        .iter()
        .all(|m| m.parameters.contains_key(BLOCK_PARAMETER))
    {
        PairingKey::BlockParameter
    } else {
        PairingKey::RunOrder
    };
    for (position, m) in members.iter_mut().enumerate() {
        m.block = match key {
            PairingKey::ExperimentBlock => m.block_index.unwrap_or_default().to_string(),
            PairingKey::BlockParameter => m.parameters[BLOCK_PARAMETER].clone(),
            PairingKey::RunOrder => position.to_string(),
        };
    }
    key
}

fn selection_matches(run: &RunManifest, selection: &RunSelection) -> bool {
    selection
        .variant
        .as_ref()
        .is_none_or(|v| run.variant.as_ref() == Some(v))
        && selection
            .parameters
            .iter()
            .all(|(k, v)| run.parameters.get(k) == Some(v))
}

/// The runs a selection picks, oldest first.
pub fn select_runs(ws: &Workspace, selection: &RunSelection) -> Result<Vec<RunManifest>> {
    if selection.run_ids.is_empty()
        && selection.variant.is_none()
        && selection.parameters.is_empty()
    {
        return Err(FlameoxError::invalid_argument(
            "select",
            "give run ids, a variant or parameters to select runs",
        )
        .remedy(
            "e.g. `flameox runs freeze --variant base` or `flameox runs freeze <run-id> <run-id>`",
        ));
    }
    let candidates = if selection.run_ids.is_empty() {
        runs::list_runs(ws)?
    } else {
        let mut picked = Vec::new();
        for id in &selection.run_ids {
            crate::services::check_id("run_ids", id)?;
            let run = runs::read_run(ws, id)?;
            if !selection_matches(&run, selection) {
                return Err(FlameoxError::invalid_argument(
                    "run_ids",
                    format!("run {id} does not match the variant/parameter filters"),
                )
                .detail("variant", run.variant.clone())
                .detail("parameters", serde_json::json!(run.parameters)));
            }
            if !picked.iter().any(|r: &RunManifest| r.run_id == run.run_id) {
                picked.push(run);
            }
        }
        picked
    };
    let chosen: Vec<RunManifest> = candidates
        .into_iter()
        .filter(|r| selection_matches(r, selection))
        .collect();
    if chosen.is_empty() {
        let all = runs::list_runs(ws)?;
        let mut variants: Vec<String> = all.iter().filter_map(|r| r.variant.clone()).collect();
        variants.sort();
        variants.dedup();
        let mut names: Vec<String> = all
            .iter()
            .flat_map(|r| r.parameters.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        return Err(
            FlameoxError::invalid_argument("select", "the selection matched no run")
                .detail("variants", variants)
                .detail("parameter_names", names)
                .recover_with("list_runs", serde_json::json!({}), "flameox runs list"),
        );
    }
    Ok(chosen)
}

/// Builds (without storing) the record for these members.
pub fn build_record(selection: RunSelection, mut members: Vec<RunSetMember>) -> RunSetRecord {
    let pairing_key = assign_blocks(&mut members);
    let content = serde_json::json!({
        "selection": selection, "pairing_key": pairing_key, "members": members,
    });
    let digest = sha256_hex(canonical_json(&content).as_bytes());
    let mut variants: Vec<String> = members.iter().filter_map(|m| m.variant.clone()).collect();
    variants.sort();
    variants.dedup();
    RunSetRecord {
        schema_version: RECORD_SCHEMA_VERSION,
        run_set_id: format!("{RUN_SET_PREFIX}{}", &digest[..32]),
        digest,
        created_at: now_rfc3339(),
        selection,
        pairing_key,
        variants,
        members,
    }
}

/// `flameox runs freeze` / `freeze_run_set`: selects, freezes, stores.
pub fn freeze(ws: &Workspace, selection: &RunSelection) -> Result<FreezeResult> {
    let runs = select_runs(ws, selection)?;
    let record = build_record(selection.clone(), runs.iter().map(member_of).collect());
    let id = record.run_set_id.clone();
    let (run_set, created) = records::write_record_once(ws, RecordKind::RunSets, &id, &record)?;
    Ok(FreezeResult { created, run_set })
}

/// Reads a stored run set.
pub fn read_run_set(ws: &Workspace, id: &str) -> Result<RunSetRecord> {
    records::read_record(ws, RecordKind::RunSets, id)
}

/// A run-set id (`rs_…`) or a run id (a one-element set).
pub fn resolve_run_set(ws: &Workspace, field: &str, requested: &str) -> Result<ResolvedRunSet> {
    crate::services::check_id(field, requested)?;
    if requested.starts_with(RUN_SET_PREFIX) {
        let record = read_run_set(ws, requested)?;
        return Ok(ResolvedRunSet {
            requested: requested.to_owned(),
            run_set_id: Some(record.run_set_id),
            pairing_key: record.pairing_key,
            members: record.members,
        });
    }
    if !runs::is_run_reference(requested) {
        return Err(FlameoxError::invalid_argument(
            field,
            "expected a run set id (rs_…) or a run id (UUID, a unique prefix, or `latest`)",
        )
        .recover_with("list_runs", serde_json::json!({}), "flameox runs list"));
    }
    let run = runs::read_run(ws, requested)?;
    let mut members = vec![member_of(&run)];
    let pairing_key = assign_blocks(&mut members);
    Ok(ResolvedRunSet {
        requested: requested.to_owned(),
        run_set_id: None,
        pairing_key,
        members,
    })
}
