//! The run-set tools — `freeze_run_set`, `compare_run_sets`,
//! `analyze_scaling`, `record_comparison`, `record_analysis` — and their
//! catalog entries: decode arguments into the engine's requests, wrap the
//! answers (kept out of `server.rs` and `catalog.rs`, which hold the tables).
//! Compare and scaling arguments decode straight into the engine's requests
//! (the strict schema check has already refused unknown fields).

use std::collections::BTreeMap;

use flameox_engine::services::analysis_records::{self, RecordOutcome};
use flameox_engine::services::compare::{self, CompareRequest};
use flameox_engine::services::run_sets::{self, RunSelection};
use flameox_engine::services::scaling::{self, ScalingRequest};
use flameox_engine::services::{QueryContext, inventory};
use serde_json::{Value, json};

use crate::catalog::{ToolGroup, ToolSpec, object};
use crate::envelope::Reply;
use crate::server::{ToolResult, to_value};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezeArgs {
    #[serde(default)]
    pub run_ids: Vec<String>,
    pub variant: Option<String>,
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
}

fn set_prop(what: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 200, "description": what })
}

fn stats_props() -> (Value, Value, Value) {
    (
        json!({ "type": "string", "maxLength": 200, "description": "Measurement name (default wall_time)." }),
        json!({ "type": "number", "minimum": 0, "maximum": 1, "description": "Default 0.95." }),
        json!({ "type": "integer", "minimum": 0, "description": "Bootstrap seed (default 0)." }),
    )
}

fn compare_schema() -> Value {
    let (metric, confidence, seed) = stats_props();
    object(
        json!({
            "baseline": set_prop("Run set (rs_…) or run id."),
            "candidate": set_prop("Run set or run id."),
            "metric": metric,
            "polarity": { "type": "string", "enum": ["lower_is_better", "higher_is_better"], "description": "Default lower_is_better." },
            "threshold": { "type": "number", "minimum": 0, "maximum": 1, "description": "Practical threshold (default 0.02)." },
            "confidence": confidence,
            "seed": seed
        }),
        &["baseline", "candidate"],
    )
}

fn scaling_schema() -> Value {
    let (metric, confidence, seed) = stats_props();
    object(
        json!({
            "target": set_prop("Run set (rs_…), run or experiment (ex_…) id."),
            "parameter": { "type": "string", "minLength": 1, "maxLength": 200, "description": "Numeric size parameter, e.g. n; required unless target is an experiment." },
            "metric": metric,
            "confidence": confidence,
            "seed": seed
        }),
        &["target"],
    )
}

/// The catalog entries of these tools.
pub fn tools() -> Vec<ToolSpec> {
    use ToolGroup::*;
    vec![
        ToolSpec {
            name: "freeze_run_set",
            title: "Freeze run set",
            description: "Freeze an immutable run set from run_ids and/or variant/parameters filters. Blocks: the block parameter, else run order.",
            group: Additive,
            input_schema: object(
                json!({
                    "run_ids": { "type": "array", "maxItems": 1000, "items": { "type": "string", "minLength": 1, "maxLength": 200 }, "description": "Runs to include." },
                    "variant": { "type": "string", "minLength": 1, "maxLength": 64, "description": "Only runs of this variant." },
                    "parameters": { "type": "object", "maxProperties": 32, "additionalProperties": { "type": "string", "maxLength": 200 }, "description": "Only runs with these parameter values." }
                }),
                &[],
            ),
        },
        ToolSpec {
            name: "compare_run_sets",
            title: "Compare run sets",
            description: "Candidate vs baseline run set: median paired log ratio over blocks, seeded BCa interval, decision, validity, compatibility checks, frame changes.",
            group: ReadOnly,
            input_schema: compare_schema(),
        },
        ToolSpec {
            name: "analyze_scaling",
            title: "Scaling",
            description: "How a metric grows with a numeric parameter per variant: medians, MAD, BCa; fits (constant…n², power law with CI on k) by AICc; growing hotspots.",
            group: ReadOnly,
            input_schema: scaling_schema(),
        },
        ToolSpec {
            name: "record_comparison",
            title: "Record comparison",
            description: "compare_run_sets, stored as a comparison record with its result digest.",
            group: Additive,
            input_schema: compare_schema(),
        },
        ToolSpec {
            name: "record_analysis",
            title: "Record analysis",
            description: "analyze_scaling, stored as an analysis record with its result digest.",
            group: Additive,
            input_schema: scaling_schema(),
        },
    ]
}

fn recorded(o: RecordOutcome) -> ToolResult {
    let what = format!(
        "{} {} {}",
        if o.created {
            "recorded"
        } else {
            "already recorded"
        },
        o.record.kind,
        o.record.record_id
    );
    Ok(Reply::new(what, to_value(&o)?))
}

/// `freeze_run_set`.
pub(crate) fn freeze(qc: &QueryContext<'_>, a: FreezeArgs) -> ToolResult {
    let selection = RunSelection {
        run_ids: a.run_ids,
        variant: a.variant,
        parameters: a.parameters,
    };
    let result = run_sets::freeze(qc.ws, &selection)?;
    let mut reply = Reply::new(
        format!(
            "run set {} ({} runs)",
            result.run_set.run_set_id,
            result.run_set.members.len()
        ),
        to_value(&result)?,
    );
    reply.links.push((
        format!("flameox://run-sets/{}", result.run_set.run_set_id),
        format!("run set {}", result.run_set.run_set_id),
    ));
    Ok(reply)
}

/// `compare_run_sets` / `record_comparison`.
pub(crate) async fn compare(
    qc: &QueryContext<'_>,
    request: CompareRequest,
    record: bool,
) -> ToolResult {
    if record {
        return recorded(analysis_records::record_comparison(qc, &request).await?);
    }
    let r = compare::compare_run_sets(qc, &request).await?;
    let what = format!(
        "{} {:?} ({:?}), {:+.2} % over {} pairs",
        r.metric,
        r.decision,
        r.validity,
        r.estimate.relative_change * 100.0,
        r.pairing.pairs.len()
    );
    Ok(Reply::new(what, to_value(&r)?))
}

/// `analyze_scaling` / `record_analysis`.
pub(crate) async fn scaling(
    qc: &QueryContext<'_>,
    request: ScalingRequest,
    record: bool,
) -> ToolResult {
    if record {
        return recorded(analysis_records::record_scaling(qc, &request).await?);
    }
    let r = scaling::analyze_scaling(qc, &request).await?;
    let what = format!(
        "{} vs {}: {} variant(s)",
        r.metric,
        r.parameter,
        r.variants.len()
    );
    Ok(Reply::new(what, to_value(&r)?))
}

/// The `flameox://run-sets/{id}` resource.
pub(crate) fn run_set_resource(
    ws: &flameox_engine::Workspace,
    id: &str,
) -> Result<Value, flameox_engine::FlameoxError> {
    Ok(inventory::evidence_get(ws, &format!("run_set:{id}"))?["record"].clone())
}
