//! Typed evidence references of investigation records (`run:<uuid>`,
//! `artifact:sha256:<hex>`, `run_set:…`, `analysis:…`, `comparison:…`,
//! `experiment:…`, `investigation:…`, `hypothesis:…`, `finding:…`, `commit:…`, a frame in
//! its scope `frame:<run or artifact>@<frame>`, a trace window
//! `window:<run or artifact>@<start_ns>..<end_ns>`, a measurement query
//! `measurements:<run or artifact>@<name prefix>`), checked to exist when
//! recorded (a frame's name against the evidence, [`check_in_evidence`]). A
//! bare run id (or a unique prefix of one, or `latest`) and a bare
//! `sha256:` artifact id are accepted and stored typed.

use crate::error::{FlameoxError, Result, closest};
use crate::records::{self, RecordKind};
use crate::revisions::{self, RevisionedKind};
use crate::services::QueryContext;
use crate::workspace::Workspace;
use crate::{runs, store};

/// The kinds a reference may name.
pub const REFERENCE_KINDS: [&str; 13] = [
    "run",
    "artifact",
    "commit",
    "frame",
    "window",
    "measurements",
    "finding",
    "run_set",
    "analysis",
    "comparison",
    "experiment",
    "investigation",
    "hypothesis",
];

/// The reference `text` names, typed and checked to exist; an unknown id is
/// `RUN_NOT_FOUND` with the closest existing ids.
pub fn checked_reference(ws: &Workspace, text: &str) -> Result<String> {
    let text = text.trim();
    if text.starts_with("sha256:") {
        store::read_artifact(ws, text)?;
        return Ok(format!("artifact:{text}"));
    }
    let record = |kind: RecordKind, id: &str| -> Result<()> {
        records::read_record::<serde_json::Value>(ws, kind, id).map(drop)
    };
    match text.split_once(':') {
        Some(("investigation", id)) => {
            revisions::existing_revision(ws, RevisionedKind::Investigations, id)?;
        }
        Some(("hypothesis", id)) => {
            revisions::existing_revision(ws, RevisionedKind::Hypotheses, id)?;
        }
        Some(("finding", id)) => {
            revisions::existing_revision(ws, RevisionedKind::Findings, id)?;
        }
        Some(("commit", id)) => check_commit(ws, id)?,
        Some(("frame", rest)) => return frame_reference(ws, rest),
        Some(("window", rest)) => return window_reference(ws, rest),
        Some(("measurements", rest)) => return measurements_reference(ws, rest),
        Some(("run", id)) => return run_reference(ws, id),
        Some(("artifact", id)) => {
            store::read_artifact(ws, id)?;
        }
        Some(("run_set", id)) => record(RecordKind::RunSets, id)?,
        Some(("analysis", id)) => record(RecordKind::Analyses, id)?,
        Some(("comparison", id)) => record(RecordKind::Comparisons, id)?,
        Some(("experiment", id)) => record(RecordKind::Experiments, id)?,
        Some((other, _)) => {
            return Err(FlameoxError::invalid_argument(
                "evidence",
                format!("unknown reference kind {other}"),
            )
            .detail("closest", closest(other, REFERENCE_KINDS, 1))
            .detail("valid_kinds", REFERENCE_KINDS.to_vec()));
        }
        None => return run_reference(ws, text),
    }
    Ok(text.to_owned())
}

/// A commit id that names a commit of this workspace (answers carry the
/// `commit_id` they were read at).
fn check_commit(ws: &Workspace, id: &str) -> Result<()> {
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(FlameoxError::invalid_argument(
            "references",
            "a commit id is 64 hex digits (the commit_id of an answer)",
        ));
    }
    if !ws.commits_dir().join(format!("{id}.json")).is_file() {
        return Err(FlameoxError::new(
            crate::error::ErrorCode::RunNotFound,
            format!("no commit {id} in this workspace"),
        )
        .remedy("use the commit_id of the answer the claim was read from"));
    }
    Ok(())
}

/// The scope of a `frame:` or `window:` reference (`<target>@…`), typed:
/// a run's full id or an artifact id, and what follows the `@`.
fn scoped<'a>(ws: &Workspace, kind: &str, rest: &'a str) -> Result<(String, &'a str)> {
    let Some((target, tail)) = rest.split_once('@') else {
        return Err(FlameoxError::invalid_argument(
            "references",
            format!(
                "a {kind} reference is {kind}:<run or artifact>@{}",
                if kind == "frame" {
                    "<frame>"
                } else {
                    "<start_ns>..<end_ns>"
                }
            ),
        ));
    };
    let scope = if target.starts_with("sha256:") {
        store::read_artifact(ws, target)?;
        target.to_owned()
    } else {
        runs::resolve_run_id(ws, target)?
    };
    Ok((scope, tail))
}

/// `frame:<scope>@<frame>`: the scope exists; the frame is checked against
/// the evidence by [`check_in_evidence`].
fn frame_reference(ws: &Workspace, rest: &str) -> Result<String> {
    let (scope, frame) = scoped(ws, "frame", rest)?;
    if frame.trim().is_empty() {
        return Err(FlameoxError::invalid_argument(
            "references",
            "a frame reference names the frame after the @",
        ));
    }
    Ok(format!("frame:{scope}@{frame}"))
}

/// `window:<scope>@<start_ns>..<end_ns>` in trace nanoseconds, start before
/// end, overlapping the run's time span where it is known.
fn window_reference(ws: &Workspace, rest: &str) -> Result<String> {
    let (scope, range) = scoped(ws, "window", rest)?;
    let bounds = range
        .split_once("..")
        .and_then(|(a, b)| Some((a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?)));
    let Some((start, end)) = bounds.filter(|(a, b)| a < b) else {
        return Err(FlameoxError::invalid_argument(
            "references",
            format!("window {range:?}: <start_ns>..<end_ns>, whole nanoseconds, start before end"),
        ));
    };
    if !scope.starts_with("sha256:")
        && let Some((first, last)) = runs::read_run(ws, &scope)?.time_span_ns
        && (end <= first || start > last)
    {
        return Err(FlameoxError::invalid_argument(
            "references",
            format!("window {start}..{end} lies outside the run's events ({first}..{last})"),
        )
        .detail("time_span_ns", [first, last]));
    }
    Ok(format!("window:{scope}@{start}..{end}"))
}

/// `measurements:<scope>@<name prefix>`: the scope exists; that it holds
/// such measurements is checked by [`check_in_evidence`].
fn measurements_reference(ws: &Workspace, rest: &str) -> Result<String> {
    let (scope, prefix) = scoped(ws, "measurements", rest)?;
    if prefix.trim().is_empty() {
        return Err(FlameoxError::invalid_argument(
            "references",
            "a measurements reference names the measurement (or a name prefix) after the @",
        ));
    }
    Ok(format!("measurements:{scope}@{prefix}"))
}

/// The frames that `frame:` references name, each looked up in its
/// scope's evidence (a missing one is `FRAME_NOT_FOUND` with the closest
/// names), and the measurements `measurements:` references query (none
/// found is `METRIC_NOT_FOUND`).
pub async fn check_in_evidence(qc: &QueryContext<'_>, references: &[String]) -> Result<()> {
    let frames: Vec<(&str, &str)> = references
        .iter()
        .filter_map(|r| r.strip_prefix("frame:")?.split_once('@'))
        .collect();
    if !frames.is_empty() {
        let session = qc.session(None)?;
        for (scope, frame) in frames {
            crate::services::query::analyze::frame_in_target(qc, &session, scope, frame).await?;
        }
    }
    // A measurement query must find something.
    for (scope, prefix) in references
        .iter()
        .filter_map(|r| r.strip_prefix("measurements:")?.split_once('@'))
    {
        let found = crate::services::query::measurements::query_measurements(
            qc,
            &crate::services::query::measurements::MeasurementsRequest {
                target: Some(scope.to_owned()),
                name_prefix: Some(prefix.to_owned()),
                limit: Some(1),
                ..Default::default()
            },
        )
        .await?;
        if found.total == 0 {
            return Err(FlameoxError::new(
                crate::error::ErrorCode::MetricNotFound,
                format!("{scope} holds no measurement named {prefix}…"),
            )
            .remedy("list them with `flameox measurements query <run>`"));
        }
    }
    Ok(())
}

/// `run:<full id>` of a run id, unique prefix or `latest` that exists.
fn run_reference(ws: &Workspace, text: &str) -> Result<String> {
    let run_id = runs::resolve_run_id(ws, text)?;
    runs::read_run(ws, &run_id)?;
    Ok(format!("run:{run_id}"))
}

/// Every reference of `texts`, checked, typed and without repeats (in the
/// order given).
pub fn checked_references(ws: &Workspace, texts: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(texts.len());
    for text in texts {
        let reference = checked_reference(ws, text)?;
        if !out.contains(&reference) {
            out.push(reference);
        }
    }
    Ok(out)
}
