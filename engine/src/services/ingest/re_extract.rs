//! Extraction again (`extract_artifact`, `flameox extract`): the stored
//! bytes of an artifact read by the extractor this build has, so evidence
//! made by an older extractor (or with other options) is replaced without
//! importing the file again.
//!
//! Each generation HEAD holds over the artifact is extracted again with the
//! options it was made with (forced producer, variant and parameter labels),
//! for the run that owns it, so its rows keep their `run_id`; the new
//! generation replaces the old one in one commit (the old one stays on
//! disk, out of HEAD, for the records pinned to older commits). Every run
//! that listed the old generation is rewritten to list the new one, and the
//! owner records the re-extraction. An artifact with no evidence in HEAD
//! (its import failed) is extracted for the newest run that registered it.
//! The stored bytes are verified against their id first: evidence is never
//! replaced by a read of damaged bytes.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use flameox_extractors::Limitation;
use flameox_extractors::detect::FormatKind;
use flameox_extractors::formats::{Reading, format};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::import_deadline::{DeadlineProgress, ImportDeadline};
use super::import_plan::{InputShape, PlannedInput, extractor_of, plan_inputs};
use super::import_progress::ImportProgress;
use super::input_extraction::ImportCall;
use super::input_workers::ByteTally;
use crate::catalog::{self, GenerationManifest, Snapshot};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::publish::commit_staged;
use crate::runs::{self, Collector, ReExtraction, RunManifest, save_run};
use crate::store::{self, ArtifactRecord};
use crate::store_in_flight::StoringFile;
use crate::workspace::Workspace;

/// What `extract_artifact` asks.
#[derive(Debug, Clone, Default)]
pub struct ExtractRequest {
    /// An artifact id, or a run of one artifact (`latest`, an id, a prefix).
    pub artifact: String,
    /// Read it as this format (a name or alias of the registry); default:
    /// the kind it was stored as.
    pub kind: Option<String>,
    /// Force the producer; default: the one each extraction was made with.
    pub producer: Option<String>,
    /// Lowers `import.timeout_seconds` for this call.
    pub timeout: Option<Duration>,
}

/// A generation the re-extraction took out of HEAD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplacedGeneration {
    pub generation_id: String,
    pub extractor: String,
    pub extractor_version: String,
    pub rows: BTreeMap<String, u64>,
}

/// One extraction of the artifact (one per run that owns evidence of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractionOutcome {
    /// The run whose rows these are (its `run_id` column).
    pub run_id: String,
    pub generation_id: String,
    /// True when HEAD already had this exact extraction: nothing changed.
    pub reused_generation: bool,
    pub producer: String,
    /// Evidence rows of the new generation, all tables.
    pub rows_total: u64,
    /// Evidence rows of what it replaced (0 when nothing was replaced).
    pub rows_before_total: u64,
    pub rows: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<ReplacedGeneration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limitations: Vec<Limitation>,
}

/// The answer of `extract_artifact`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractResult {
    pub artifact_id: String,
    pub original_name: String,
    pub kind: String,
    /// The extractor that read it now.
    pub extractor: Collector,
    pub commit_id: String,
    /// True when every extraction was already in HEAD.
    pub reused_generation: bool,
    pub extractions: Vec<ExtractionOutcome>,
    /// Runs rewritten to read the new generations.
    pub runs_updated: Vec<String>,
}

/// Extracts a stored artifact again within the import's deadline.
pub fn extract_artifact(
    ws: &Workspace,
    request: &ExtractRequest,
    progress: &dyn ImportProgress,
) -> Result<ExtractResult> {
    let deadline = ImportDeadline::of(ws, request.timeout);
    let guarded = DeadlineProgress::new(progress, deadline);
    extract_within(ws, request, &guarded).map_err(|e| guarded.explain(e))
}

/// One extraction to make: whose rows, with which labels, replacing what.
struct Target {
    owner: String,
    forced_producer: Option<String>,
    variant: Option<String>,
    parameters: BTreeMap<String, String>,
    before: Option<GenerationManifest>,
}

fn extract_within(
    ws: &Workspace,
    request: &ExtractRequest,
    progress: &DeadlineProgress<'_>,
) -> Result<ExtractResult> {
    progress.phase("validating_artifact");
    let artifact_id = crate::services::viewer::artifact_of(ws, &request.artifact)?;
    let record = store::read_artifact(ws, &artifact_id)?;
    // On a shared store the bytes come down the first time they are needed.
    crate::shared_store::ensure_payload(ws, &record)?;
    let input = plan_stored(ws, &record, request.kind.as_deref())?;
    let extractor = extractor_of(input.kind)?;
    if !store::verify_payload(ws, &record)? {
        return Err(FlameoxError::new(
            ErrorCode::ArtifactIntegrityFailed,
            format!("the stored bytes of {artifact_id} no longer match their id"),
        )
        .detail("artifact_id", artifact_id.clone())
        .remedy("import the original file again; nothing was replaced"));
    }
    let head = catalog::pin_head(ws)?;
    let targets = targets_of(ws, &head, &record, request.producer.as_deref())?;

    progress.phase("extracting");
    let stop = AtomicBool::new(false);
    let tally = ByteTally::new(progress, record.bytes * targets.len() as u64);
    let mut staged = Vec::with_capacity(targets.len());
    for target in &targets {
        let call = ImportCall {
            ws,
            run_id: target.owner.clone(),
            forced_producer: target.forced_producer.clone(),
            variant: target.variant.clone(),
            parameters: target.parameters.clone(),
            progress,
            events_in_memory: usize::try_from(ws.config.import.events_in_memory)
                .unwrap_or(usize::MAX)
                .max(1),
            stop: &stop,
            staging: None,
        };
        let outcome = call.store_and_stage(&input, Ok(StoringFile::Placed(record.clone())), &tally);
        outcome.stored?;
        let replaces = target
            .before
            .iter()
            .map(|g| g.generation_id.clone())
            .collect();
        staged.push(outcome.extracted?.replacing(replaces));
    }
    if progress.cancelled() {
        return Err(FlameoxError::new(
            ErrorCode::OperationCancelled,
            "the extraction was cancelled; nothing was replaced",
        ));
    }
    progress.phase("publishing");
    let outcomes = commit_staged(ws, staged)?;
    let commit_id = crate::publish::commit_of(&outcomes);
    let mut extractions = Vec::with_capacity(outcomes.len());
    for (target, outcome) in targets.iter().zip(&outcomes) {
        let g = &outcome.generation;
        let replaced: Vec<ReplacedGeneration> = target
            .before
            .iter()
            .filter(|b| b.generation_id != g.generation_id)
            .map(|b| ReplacedGeneration {
                generation_id: b.generation_id.clone(),
                extractor: b.operation.extractor.clone(),
                extractor_version: b.operation.extractor_version.clone(),
                rows: b.summary.rows.clone(),
            })
            .collect();
        extractions.push(ExtractionOutcome {
            run_id: target.owner.clone(),
            generation_id: g.generation_id.clone(),
            reused_generation: outcome.reused,
            producer: g.summary.producer.clone(),
            rows_total: g.summary.rows.values().sum(),
            rows_before_total: replaced.iter().flat_map(|r| r.rows.values()).sum(),
            rows: g.summary.rows.clone(),
            replaced,
            limitations: g.summary.limitations.clone(),
        });
    }
    let extractor = Collector {
        name: extractor.name.into(),
        version: extractor.version.into(),
    };
    // What each new generation stands in for: what it replaced, and what
    // those had replaced (a run may still list any of them).
    let predecessors: Vec<Vec<String>> = targets
        .iter()
        .zip(&outcomes)
        .map(|(t, o)| {
            let mut olds: Vec<String> = t
                .before
                .iter()
                .filter(|b| b.generation_id != o.generation.generation_id)
                .flat_map(|b| std::iter::once(&b.generation_id).chain(&b.superseded))
                .chain(&o.generation.superseded)
                .cloned()
                .collect();
            olds.sort();
            olds.dedup();
            olds
        })
        .collect();
    // Published: a kill from here on leaves runs listing the replaced
    // generation, which reads go through (`Snapshot::generations_listed`)
    // and the next call of the same extraction rewrites.
    crate::publish::pause_point("published");
    if input.kind.name() != record.kind {
        // Read as another kind, successfully: that is its kind from now on.
        store::set_kind(ws, &record, input.kind.name())?;
    }
    let runs_updated = rewrite_runs(
        ws,
        &record,
        input.kind.name(),
        &extractions,
        &predecessors,
        &extractor,
    )?;
    progress.phase("completed");
    Ok(ExtractResult {
        artifact_id,
        original_name: record.original_name.clone(),
        kind: input.kind.name().into(),
        extractor,
        commit_id,
        reused_generation: outcomes.iter().all(|o| o.reused),
        extractions,
        runs_updated,
    })
}

/// The stored artifact as an input: its own kind, or `kind` when given
/// (detected again from the stored bytes, so a kind that cannot read them
/// is refused before anything runs).
fn plan_stored(
    ws: &Workspace,
    record: &ArtifactRecord,
    kind: Option<&str>,
) -> Result<PlannedInput> {
    let stored_kind = FormatKind::from_name(&record.kind).ok_or_else(|| {
        FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("this build has no extractor for {}", record.kind),
        )
        .detail("kind", record.kind.clone())
    })?;
    let payload = store::payload_path(ws, record);
    let folder = |k: FormatKind| {
        format(k).is_some_and(|f| matches!(f.reading, Reading::StoredFolder { .. }))
    };
    let asked = kind
        .filter(|k| *k != super::import_plan::AUTO)
        .map(|k| {
            FormatKind::from_name(k).ok_or_else(|| {
                let valid = flameox_extractors::formats::readable_names();
                FlameoxError::invalid_argument("kind", format!("unknown kind {k}"))
                    .detail(
                        "closest",
                        crate::error::closest(k, valid.iter().copied(), 1),
                    )
                    .detail("valid", valid)
            })
        })
        .transpose()?;
    if folder(stored_kind) || asked.is_some_and(folder) {
        if asked.is_some_and(|k| k != stored_kind) {
            return Err(FlameoxError::invalid_argument(
                "kind",
                format!(
                    "{} was stored as a {} folder; it is read only as that",
                    record.original_name, record.kind
                ),
            ));
        }
        return Ok(PlannedInput {
            shape: InputShape::File(payload),
            name: record.original_name.clone(),
            kind: stored_kind,
            producer_hint: None,
        });
    }
    let kind_name = asked.unwrap_or(stored_kind).name();
    let mut input = plan_inputs(ws, &[payload], Some(kind_name))?
        .into_iter()
        .next()
        .ok_or_else(|| FlameoxError::internal("planning the stored artifact produced nothing"))?;
    input.name = record.original_name.clone();
    Ok(input)
}

/// The extractions to make: one per generation HEAD holds over the
/// artifact, or one for the newest run that registered it.
fn targets_of(
    ws: &Workspace,
    head: &Snapshot,
    record: &ArtifactRecord,
    producer: Option<&str>,
) -> Result<Vec<Target>> {
    let forced = producer
        .filter(|p| *p != super::import_plan::AUTO)
        .map(str::to_owned);
    let existing: Vec<Target> = head
        .generations_for(&record.artifact_id)
        .map(|g| {
            let options = &g.operation.options;
            let text = |key: &str| options.get(key).and_then(Value::as_str).map(str::to_owned);
            Target {
                owner: g.inputs.run_id.clone(),
                forced_producer: forced.clone().or_else(|| text("producer")),
                variant: text("variant"),
                parameters: options
                    .get("parameters")
                    .and_then(|p| serde_json::from_value(p.clone()).ok())
                    .unwrap_or_default(),
                before: Some(g.clone()),
            }
        })
        .collect();
    if !existing.is_empty() {
        return Ok(existing);
    }
    let owner = runs::list_runs(ws)?
        .into_iter()
        .filter(|r| {
            r.artifacts
                .iter()
                .any(|a| a.artifact_id == record.artifact_id)
        })
        .max_by(|a, b| (&a.created_at, &a.run_id).cmp(&(&b.created_at, &b.run_id)))
        .ok_or_else(|| {
            FlameoxError::new(
                ErrorCode::RunNotFound,
                format!("no run registered {}", record.artifact_id),
            )
            .remedy("import the file: extraction needs the run its rows belong to")
        })?;
    Ok(vec![Target {
        variant: owner.variant.clone(),
        parameters: owner.parameters.clone(),
        owner: owner.run_id,
        forced_producer: forced,
        before: None,
    }])
}

/// Points every run that listed a replaced generation (or one it had
/// replaced) at its successor, and records the re-extraction on the run
/// that owns it.
fn rewrite_runs(
    ws: &Workspace,
    record: &ArtifactRecord,
    kind: &str,
    extractions: &[ExtractionOutcome],
    predecessors: &[Vec<String>],
    extractor: &Collector,
) -> Result<Vec<String>> {
    let changed: Vec<(&ExtractionOutcome, &Vec<String>)> =
        extractions.iter().zip(predecessors).collect();
    let head = catalog::pin_head(ws)?;
    let mut updated = Vec::new();
    for mut run in runs::list_runs(ws)? {
        let mut touched = false;
        for (e, olds) in &changed {
            let owns = run.run_id == e.run_id;
            let listed = run.generation_ids.iter().any(|id| olds.contains(id));
            let rewrite = listed || (owns && !run.generation_ids.contains(&e.generation_id));
            if rewrite {
                // Each old id becomes the new one (a failed import's run
                // gains it), once, in the place of the first.
                let mut ids = Vec::with_capacity(run.generation_ids.len() + 1);
                for id in &run.generation_ids {
                    let id = if olds.contains(id) {
                        &e.generation_id
                    } else {
                        id
                    };
                    if !ids.contains(id) {
                        ids.push(id.clone());
                    }
                }
                if !ids.contains(&e.generation_id) {
                    ids.push(e.generation_id.clone());
                }
                run.generation_ids = ids;
                touched = true;
            }
            // A call that changed nothing for this run records nothing.
            if owns && (rewrite || !e.reused_generation || !e.replaced.is_empty()) {
                run.extractions.push(ReExtraction {
                    at: now_rfc3339(),
                    artifact_id: record.artifact_id.clone(),
                    generation_id: e.generation_id.clone(),
                    replaced: e.replaced.iter().map(|r| r.generation_id.clone()).collect(),
                    extractor: extractor.clone(),
                });
                settle_status(&mut run, e, extractor);
                touched = true;
            }
        }
        if touched {
            for a in run
                .artifacts
                .iter_mut()
                .filter(|a| a.artifact_id == record.artifact_id)
            {
                a.kind = kind.to_owned();
            }
            run.rows = catalog::rows_of(ws, &head, &run.generation_ids);
            save_run(ws, &mut run)?;
            updated.push(run.run_id.clone());
        }
    }
    Ok(updated)
}

/// A run of one artifact takes the new extraction's extractor and
/// limitations; a run whose import failed is completed by it.
fn settle_status(run: &mut RunManifest, e: &ExtractionOutcome, extractor: &Collector) {
    if run.artifacts.len() != 1 {
        return;
    }
    run.collector = Some(extractor.clone());
    run.limitation_details = e.limitations.clone();
    run.limitations = e
        .limitations
        .iter()
        .map(|l| format!("{}: {}", l.code, l.message))
        .collect();
    if run.status.extraction != "completed" {
        run.status.extraction = "completed".into();
        run.status.validation = "passed".into();
        run.error = None;
    }
    if let Some(artifact) = run.artifacts.first_mut() {
        artifact.producer = Some(e.producer.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::OperationKey;
    use crate::publish::publish_extraction;
    use crate::services::import::{ImportRequest, Quiet, import_artifact};
    use crate::services::stale_extractions::stale_extractions;
    use flameox_extractors::ExtractionSummary;

    const TRACE: &str = r#"{"traceEvents":[
        {"name":"step","ph":"X","ts":0,"dur":100,"pid":1,"tid":1},
        {"name":"matmul","ph":"X","ts":10,"dur":60,"pid":1,"tid":1},
        {"name":"relu","ph":"X","ts":75,"dur":20,"pid":1,"tid":1}]}"#;

    /// A workspace whose one artifact's evidence in HEAD was made by an
    /// "older extractor" that wrote no rows (what a build before a fix
    /// left): the generation the import made is superseded by it.
    fn with_old_evidence() -> (tempfile::TempDir, Workspace, String, String, u64) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ws, _) = Workspace::init(dir.path()).expect("init");
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, TRACE).expect("trace");
        let request = ImportRequest {
            path: trace,
            ..ImportRequest::default()
        };
        let imported = import_artifact(&ws, &request, &Quiet).expect("import");
        let rows: u64 = imported.rows.values().sum();
        assert!(imported.rows["trace_events"] >= 3, "{:?}", imported.rows);
        let head = catalog::pin_head(&ws).expect("head");
        let made = head.generations[0].operation.clone();
        let old = OperationKey {
            extractor_version: "0-before-this-build".into(),
            ..made.clone()
        };
        publish_extraction(&ws, old, &imported.run_id, |_, _| {
            Ok(ExtractionSummary {
                extractor: made.extractor.clone(),
                extractor_version: "0-before-this-build".into(),
                format: "chrome_json".into(),
                producer: "chrome".into(),
                ..ExtractionSummary::default()
            })
        })
        .expect("publish the old extractor's generation");
        (dir, ws, imported.run_id, imported.artifact_id, rows)
    }

    #[test]
    fn old_evidence_is_listed_then_replaced_and_the_run_reads_the_new_generation() {
        let (_dir, ws, run_id, artifact_id, rows) = with_old_evidence();
        let head = catalog::pin_head(&ws).expect("head");
        assert_eq!(head.generations_for(&artifact_id).count(), 1);
        // The run still lists the import's generation; it reads its successor.
        let run = runs::read_run(&ws, &run_id).expect("run");
        let read: Vec<_> = head.generations_listed(&run.generation_ids).collect();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].operation.extractor_version, "0-before-this-build");
        let stale = stale_extractions(&head);
        assert_eq!(stale.total, 1, "{stale:?}");
        assert_eq!(stale.items[0].artifact_id, artifact_id);
        assert_eq!(stale.items[0].reasons, vec!["extractor_version"]);
        assert_eq!(stale.items[0].refresh.operation, "extract_artifact");
        let detail =
            crate::services::artifact_detail::show_artifact(&ws, &run_id, None, None, None)
                .expect("the artifact by its run");
        assert_eq!(detail.record.artifact_id, artifact_id);
        let said = detail
            .stale_extraction
            .expect("the artifact says it is stale");
        assert_eq!(said.current_version, stale.items[0].current_version);

        let request = ExtractRequest {
            artifact: artifact_id.clone(),
            ..ExtractRequest::default()
        };
        let result = extract_artifact(&ws, &request, &Quiet).expect("extract");
        assert!(!result.reused_generation);
        let [one] = result.extractions.as_slice() else {
            panic!("one extraction: {result:?}");
        };
        assert_eq!(one.run_id, run_id);
        assert_eq!(one.rows_total, rows);
        assert_eq!(one.rows_before_total, 0);
        assert_eq!(one.replaced.len(), 1);
        assert_eq!(one.replaced[0].extractor_version, "0-before-this-build");
        assert_eq!(result.runs_updated, vec![run_id.clone()]);

        let head = catalog::pin_head(&ws).expect("head");
        let now: Vec<_> = head.generations_for(&artifact_id).collect();
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].generation_id, one.generation_id);
        assert_eq!(
            now[0].superseded,
            vec![one.replaced[0].generation_id.clone()]
        );
        assert_eq!(stale_extractions(&head).total, 0);
        let detail =
            crate::services::artifact_detail::show_artifact(&ws, &artifact_id, None, None, None)
                .expect("artifact");
        assert!(detail.stale_extraction.is_none());
        let run = runs::read_run(&ws, &run_id).expect("run");
        assert_eq!(run.generation_ids, vec![one.generation_id.clone()]);
        assert_eq!(run.rows.values().sum::<u64>(), rows);
        assert_eq!(run.extractions.len(), 1);
        assert_eq!(
            run.extractions[0].replaced,
            vec![one.replaced[0].generation_id.clone()]
        );

        // Nothing left to do: the same extraction is reused, nothing is written.
        let again = extract_artifact(&ws, &request, &Quiet).expect("extract again");
        assert!(again.reused_generation);
        assert!(again.runs_updated.is_empty());
        assert_eq!(
            again.commit_id,
            catalog::read_head(&ws).expect("head").unwrap_or_default()
        );
    }

    #[test]
    fn damaged_stored_bytes_replace_nothing() {
        let (_dir, ws, _run_id, artifact_id, _) = with_old_evidence();
        let before = catalog::read_head(&ws).expect("head");
        let record = store::read_artifact(&ws, &artifact_id).expect("record");
        let payload = store::payload_path(&ws, &record);
        let mut perms = std::fs::metadata(&payload).expect("payload").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&payload, perms).expect("writable");
        let mut bytes = std::fs::read(&payload).expect("payload");
        bytes[20] ^= 0x20;
        std::fs::write(&payload, bytes).expect("damage");
        let request = ExtractRequest {
            artifact: artifact_id,
            ..ExtractRequest::default()
        };
        let err = extract_artifact(&ws, &request, &Quiet).expect_err("refused");
        assert_eq!(err.code, ErrorCode::ArtifactIntegrityFailed, "{err:?}");
        assert_eq!(catalog::read_head(&ws).expect("head"), before);
    }

    #[test]
    fn a_kind_that_cannot_read_the_bytes_or_is_unknown_is_refused() {
        let (_dir, ws, _run_id, artifact_id, _) = with_old_evidence();
        let unknown = ExtractRequest {
            artifact: artifact_id.clone(),
            kind: Some("chrome_jsn".into()),
            ..ExtractRequest::default()
        };
        let err = extract_artifact(&ws, &unknown, &Quiet).expect_err("unknown kind");
        assert_eq!(err.code, ErrorCode::InvalidArguments, "{err:?}");
        let wrong = ExtractRequest {
            kind: Some("pyperf".into()),
            ..unknown
        };
        let before = catalog::read_head(&ws).expect("head");
        assert!(extract_artifact(&ws, &wrong, &Quiet).is_err());
        assert_eq!(catalog::read_head(&ws).expect("head"), before);
    }
}
