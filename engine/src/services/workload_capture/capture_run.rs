//! Executing a capture plan: re-plan and refuse a stale plan, record an
//! execution run, run the (wrapped) workload as a supervised process tree,
//! then keep what it produced — stdout, stderr, an execution receipt, the
//! adapter's profile and declared outputs — as artifacts of that run, and
//! publish their evidence in one commit. The receipt becomes `measurements`
//! rows through its extractor (the same staged path imports use), so a failed
//! or timed-out run is still recorded with its status and resources.
//! Cancellation kills the tree; an incomplete profile is quarantined.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flameox_extractors::ExtractOptions;
use flameox_extractors::execution_receipt::{
    ExecutionReceipt, RECEIPT_EXTRACTOR_NAME, RECEIPT_EXTRACTOR_VERSION, RECEIPT_SCHEMA,
    StreamReceipt, extract_execution_receipt,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::catalog::OperationKey;
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::env::child_environment;
use crate::execution::{CapturedOutput, ProcessOutcome, ProcessSpec, Termination, run_process};
use crate::fsutil::now_rfc3339;
use crate::project::{self};
use crate::publish::{StagedGeneration, commit_staged, stage_extraction};
use crate::runs::{RunArtifact, RunManifest, save_run};
use crate::services::adapters::{self, CAPTURE_DIR};
use crate::services::capture::{CapturePlan, plan_capture, resolve_cwd};
use crate::services::capture_outputs::{Kept, keep_outputs, post_process};
use crate::services::import::ImportProgress;
use crate::services::import_plan::extract_error;
use crate::services::import_progress::ProgressSupervision;
use crate::services::workload_capture::observations;
use crate::staging::StagingArea;
use crate::store;
use crate::workspace::Workspace;

/// What `capture run` / `execute_capture_plan` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureResult {
    pub run_id: String,
    /// `completed`, `failed`, `timed_out` or `cancelled`.
    pub status: String,
    /// The profile capture: `completed`, `partial` (quarantined), `failed`,
    /// `interrupted` or `not_applicable`.
    pub capture: String,
    /// `passed` when the oracle (exit codes, stdout text) and required
    /// outputs are satisfied.
    pub validation: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_time_ns: u64,
    pub cpu_time_ns: u64,
    pub peak_rss_bytes: u64,
    pub measurements: u64,
    pub artifacts: Vec<RunArtifact>,
    pub commit_id: Option<String>,
    pub limitations: Vec<String>,
    /// Incomplete files moved to `.flameox/quarantine/` (names only).
    pub quarantined: Vec<String>,
    /// The first 2 KiB of stdout and stderr (lossy UTF-8).
    pub stdout_head: String,
    pub stderr_head: String,
    pub plan_binding_digest: String,
}

fn head(out: &CapturedOutput) -> String {
    let end = out.bytes.len().min(2048);
    String::from_utf8_lossy(&out.bytes[..end]).into_owned()
}

fn stream(out: &CapturedOutput) -> StreamReceipt {
    StreamReceipt {
        total_bytes: out.total_bytes,
        kept_bytes: out.bytes.len() as u64,
        truncated: out.truncated,
    }
}

/// The error a capture that did not complete becomes (the run is recorded).
pub fn interrupted(result: &CaptureResult) -> Option<FlameoxError> {
    let code = match result.status.as_str() {
        "timed_out" => ErrorCode::ProcessTimeout,
        "cancelled" => ErrorCode::ProcessCancelled,
        _ => return None,
    };
    let message = format!(
        "the workload {}; its process tree was killed and the run recorded",
        result.status.replace('_', " ")
    );
    Some(
        FlameoxError::new(code, message)
            .with_run(result.run_id.clone())
            .detail("result", serde_json::to_value(result).unwrap_or_default()),
    )
}

/// Refuses a plan whose bound inputs changed since it was made.
pub fn recheck_plan(ws: &Workspace, plan: &CapturePlan) -> Result<CapturePlan> {
    let current = plan_capture(ws, &plan.request)?;
    if current.binding_digest != plan.binding_digest {
        return Err(FlameoxError::new(
            ErrorCode::InvalidCapturePlan,
            "the workload, its parameters, the program or the adapter changed since the plan was made",
        )
        .detail("planned_digest", plan.binding_digest.clone())
        .detail("current_digest", current.binding_digest)
        .recover_with(
            "plan_capture",
            json!({ "workload_name": plan.request.workload, "adapter": plan.request.adapter }),
            format!("flameox capture plan {} --workload {}", plan.request.adapter, plan.request.workload),
        ));
    }
    Ok(current)
}

/// Stores `bytes` (written to a staging file named `name`) as an artifact.
fn store_bytes(
    ws: &Workspace,
    dir: &Path,
    name: &str,
    bytes: &[u8],
    kind: &str,
    role: &str,
) -> Result<RunArtifact> {
    let path = dir.join(name);
    std::fs::write(&path, bytes)
        .map_err(|e| crate::error::io_error("writing a capture file", e))?;
    let record = store::store_file(ws, &path, kind)?;
    Ok(RunArtifact {
        artifact_id: record.artifact_id,
        kind: kind.to_owned(),
        producer: Some("flameox".into()),
        role: role.to_owned(),
        original_name: name.to_owned(),
        bytes: record.bytes,
        metadata: Default::default(),
    })
}

fn execution_status(outcome: &ProcessOutcome, allowed: &[i32]) -> &'static str {
    match outcome.termination {
        Termination::TimedOut => "timed_out",
        Termination::Cancelled => "cancelled",
        Termination::Signaled => "failed",
        Termination::Exited if outcome.exit_code.is_some_and(|c| allowed.contains(&c)) => {
            "completed"
        }
        Termination::Exited => "failed",
    }
}

/// Runs a plan; see the module comment.
pub fn execute_capture(
    ws: &Workspace,
    plan: &CapturePlan,
    progress: &dyn ImportProgress,
) -> Result<CaptureResult> {
    progress.phase("planning");
    let plan = recheck_plan(ws, plan)?;
    let (config, _) = project::load_valid(ws.project_root())?;
    let def = project::find_workload(&config, &plan.request.workload)?.clone();
    let cwd = resolve_cwd(ws.project_root(), &def.cwd)?;
    let mut run = RunManifest::new_execution();
    run.parameters = plan
        .parameters
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    run.variant = plan.request.variant.clone();
    for (key, value) in [
        ("workload", json!(plan.request.workload)),
        ("definition_hash", json!(plan.definition_hash)),
        ("configuration_id", json!(plan.configuration_id)),
        ("adapter", json!(plan.request.adapter)),
        ("argv", json!(plan.argv)),
        ("command", json!(plan.command)),
        ("cwd", json!(plan.cwd)),
        ("trial_id", json!(plan.request.trial_id)),
        ("plan_binding_digest", json!(plan.binding_digest)),
        ("containment", json!(plan.containment)),
    ] {
        run.metadata.insert(key.to_owned(), value);
    }
    for (key, value) in [
        (
            "experiment_id",
            plan.request.experiment_id.as_ref().map(|e| json!(e)),
        ),
        ("block_index", plan.request.block_index.map(|b| json!(b))),
        ("warmup", plan.request.warmup.then_some(json!(true))),
    ] {
        let Some(value) = value else { continue };
        run.metadata.insert(key.to_owned(), value);
    }
    save_run(ws, &mut run)?;
    match run_recorded(ws, &plan, &def, &cwd, &mut run, progress) {
        Ok(result) => Ok(result),
        Err(err) => {
            let err = err.with_run(run.run_id.clone());
            run.status.extraction = "failed".into();
            run.status.validation = "failed".into();
            if run.status.execution == "running" {
                run.status.execution = "failed".into();
                run.status.capture = "failed".into();
            }
            run.error = Some(err.clone());
            save_run(ws, &mut run)?;
            Err(err)
        }
    }
}

fn run_recorded(
    ws: &Workspace,
    plan: &CapturePlan,
    def: &project::WorkloadDef,
    cwd: &Path,
    run: &mut RunManifest,
    progress: &dyn ImportProgress,
) -> Result<CaptureResult> {
    let staging = StagingArea::create(ws, &format!("capture-{}", run.run_id))?;
    let dir = staging.dir().to_path_buf();
    let dir_text = dir.to_string_lossy().into_owned();
    let program = PathBuf::from(&plan.program);
    let wrapped = adapters::wrap_in(
        ws,
        &plan.request.adapter,
        &program,
        &plan.argv,
        &dir_text,
        &plan.request.adapter_options,
    )?;
    let mut spec = ProcessSpec::new(
        wrapped.program.clone(),
        wrapped.command.clone(),
        cwd.to_path_buf(),
        Duration::from_secs_f64(def.timeout_seconds),
    );
    spec.env = child_environment(&plan.environment.declared);
    spec.output_limit = plan.output_limit_bytes as usize;
    // Observed before the workload starts, never while it is measured.
    let observed = observations::observe(
        ws.project_root(),
        &program,
        &plan.argv,
        cwd,
        &plan.environment.declared,
    );
    let observed_bytes =
        serde_json::to_vec_pretty(&observed).map_err(|e| FlameoxError::internal(e.to_string()))?;
    let started_at = now_rfc3339();
    progress.phase("capturing");
    let outcome = run_process(&spec, &ProgressSupervision(progress))?;
    let allowed = def
        .oracle
        .as_ref()
        .and_then(|o| o.exit_codes.clone())
        .unwrap_or_else(|| vec![0]);
    let status = execution_status(&outcome, &allowed);
    run.status.execution = status.to_owned();

    progress.phase("validating_artifact");
    let mut artifacts = vec![
        store_bytes(
            ws,
            &dir,
            "stdout.txt",
            &outcome.stdout.bytes,
            "text",
            "stdout",
        )?,
        store_bytes(
            ws,
            &dir,
            "stderr.txt",
            &outcome.stderr.bytes,
            "text",
            "stderr",
        )?,
        store_bytes(
            ws,
            &dir,
            "observations.json",
            &observed_bytes,
            observations::OBSERVATIONS_KIND,
            "observations",
        )?,
    ];
    let receipt = ExecutionReceipt {
        schema: RECEIPT_SCHEMA.into(),
        run_id: run.run_id.clone(),
        workload: plan.request.workload.clone(),
        definition_hash: plan.definition_hash.clone(),
        adapter: plan.request.adapter.clone(),
        argv: plan.argv.clone(),
        command: plan
            .command
            .iter()
            .map(|a| a.replace(CAPTURE_DIR, "<capture>"))
            .collect(),
        cwd: plan.cwd.clone(),
        parameters: plan
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
            .collect(),
        variant: plan.request.variant.clone(),
        trial_id: plan.request.trial_id.clone(),
        is_warmup: plan.request.warmup,
        started_at,
        status: status.to_owned(),
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        wall_time_ns: outcome.wall_time_ns,
        cpu_time_ns: outcome.cpu_time_ns,
        user_cpu_ns: outcome.user_cpu_ns,
        system_cpu_ns: outcome.system_cpu_ns,
        peak_rss_bytes: outcome.peak_rss_bytes,
        peak_tree_rss_bytes: outcome.peak_tree_rss_bytes,
        rusage_max_rss_bytes: outcome.rusage_max_rss_bytes,
        rss_samples: outcome.rss_samples,
        max_processes: outcome.max_processes,
        survivors_killed: outcome.survivors_killed,
        stdout: stream(&outcome.stdout),
        stderr: stream(&outcome.stderr),
    };
    let receipt_bytes =
        serde_json::to_vec_pretty(&receipt).map_err(|e| FlameoxError::internal(e.to_string()))?;
    let receipt_artifact = store_bytes(
        ws,
        &dir,
        "receipt.json",
        &receipt_bytes,
        "execution_receipt",
        "receipt",
    )?;

    progress.phase("extracting");
    let mut staged: Vec<StagedGeneration> = vec![stage_receipt(
        ws,
        &run.run_id,
        &receipt_artifact.artifact_id,
        &receipt_bytes,
    )?];
    artifacts.insert(0, receipt_artifact);
    let complete = matches!(
        outcome.termination,
        Termination::Exited | Termination::Signaled
    );
    let profile = post_process(&plan.request.adapter, &wrapped, &dir, complete)?;
    let Kept {
        artifacts: kept,
        staged: kept_staged,
        limitations,
        quarantined,
        capture,
        outputs_ok,
    } = keep_outputs(ws, run, plan, &dir, profile, complete, progress)?;
    artifacts.extend(kept);
    staged.extend(kept_staged);
    run.artifacts = artifacts.clone();
    run.status.capture = capture;
    let stdout_ok = def
        .oracle
        .as_ref()
        .and_then(|o| o.stdout_contains.as_ref())
        .is_none_or(|text| String::from_utf8_lossy(&outcome.stdout.bytes).contains(text.as_str()));
    run.status.validation = if status == "completed" && stdout_ok && outputs_ok {
        "passed"
    } else {
        "failed"
    }
    .into();
    for l in &limitations {
        run.limitations.push(format!("{}: {}", l.code, l.message));
    }
    run.limitation_details = limitations;
    save_run(ws, run)?;

    progress.phase("publishing");
    let outcomes = commit_staged(ws, staged)?;
    run.status.extraction = "completed".into();
    run.generation_ids = outcomes
        .iter()
        .map(|o| o.generation.generation_id.clone())
        .collect();
    run.commit_id = outcomes
        .iter()
        .find(|o| !o.reused)
        .or(outcomes.first())
        .map(|o| o.commit_id.clone());
    for o in &outcomes {
        for (table, rows) in &o.generation.summary.rows {
            *run.rows.entry(table.clone()).or_default() += rows;
        }
    }
    save_run(ws, run)?;
    progress.phase("completed");
    Ok(CaptureResult {
        run_id: run.run_id.clone(),
        status: status.to_owned(),
        capture: run.status.capture.clone(),
        validation: run.status.validation.clone(),
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        wall_time_ns: outcome.wall_time_ns,
        cpu_time_ns: outcome.cpu_time_ns,
        peak_rss_bytes: outcome.peak_rss_bytes,
        measurements: run.rows.get("measurements").copied().unwrap_or(0),
        artifacts,
        commit_id: run.commit_id.clone(),
        limitations: run.limitations.clone(),
        quarantined,
        stdout_head: head(&outcome.stdout),
        stderr_head: head(&outcome.stderr),
        plan_binding_digest: plan.binding_digest.clone(),
    })
}

/// Stages the receipt's measurements.
fn stage_receipt(
    ws: &Workspace,
    run_id: &str,
    artifact_id: &str,
    bytes: &[u8],
) -> Result<StagedGeneration> {
    let operation = OperationKey {
        extractor: RECEIPT_EXTRACTOR_NAME.into(),
        extractor_version: RECEIPT_EXTRACTOR_VERSION.into(),
        artifact_id: artifact_id.to_owned(),
        options: json!({}),
    };
    let options = ExtractOptions::new(run_id, artifact_id);
    stage_extraction(ws, operation, run_id, None, |sink, _| {
        extract_execution_receipt(bytes, &options, sink)
            .map_err(|e| extract_error(e, "execution_receipt"))
    })
}
