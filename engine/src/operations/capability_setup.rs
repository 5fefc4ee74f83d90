//! Declarations of capability setup: start (pinned adapters installed into
//! flameox's managed runtime by a detached worker; the same idempotency key
//! reconnects), get (phase, progress, per-adapter outcome, verification)
//! and cancel (the installer ended, this setup's changes rolled back).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::detached::{
    GetOperationRequest, OperationRequest, cancel_answer, get_answer, started_answer,
};
use super::schema::input_schema;
use super::session::Session;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::error::FlameoxError;
use crate::services::capability_setup::setup::{SETUP_KIND, start_capability_setup};
use crate::services::capability_setup::third_party::approve;

/// What `start_capability_setup` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSetupRequest {
    /// Your key for this request (8-128 chars); resending it reconnects to the same operation.
    #[schemars(length(min = 8, max = 128))]
    pub idempotency_key: String,
    /// Adapters from list_capabilities' setup_adapters, e.g. ["py-spy"].
    #[schemars(length(min = 1, max = 8))]
    pub adapters: Vec<String>,
}

/// What `prepare_adapter` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrepareAdapterRequest {
    /// A third-party adapter from list_capabilities' setup_third_party_adapters.
    #[schemars(length(min = 1, max = 64))]
    pub adapter: String,
    /// Its distribution as listed (absent for a plain program).
    #[schemars(length(min = 1, max = 200))]
    pub distribution: Option<String>,
    /// Its version as listed (absent for a plain program).
    #[schemars(length(min = 1, max = 200))]
    pub version: Option<String>,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "start_capability_setup",
        cli: &["capability-setup", "start"],
        title: "Start capability setup",
        description: "Install adapters named in list_capabilities' setup_adapters (pinned) into flameox's managed runtime, in a worker; returns operation_id at once.",
        group: Group::Execute,
        positional: &["adapters"],
        schema: input_schema::<StartSetupRequest>,
        run: Body::Session(run_start),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_capability_setup",
        cli: &["capability-setup", "status"],
        title: "Get capability setup",
        description: "A capability setup's status, phase, per-adapter outcome and verification.",
        group: Group::ReadOnly,
        positional: &["operation_id"],
        schema: input_schema::<GetOperationRequest>,
        run: Body::Session(run_get),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "cancel_capability_setup",
        cli: &["capability-setup", "cancel"],
        title: "Cancel capability setup",
        description: "Stop a capability setup: its installer is ended and what it changed rolled back; returns the terminal state.",
        group: Group::Execute,
        positional: &["operation_id"],
        schema: input_schema::<OperationRequest>,
        run: Body::Session(run_cancel),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "prepare_adapter",
        cli: &["adapter", "approve"],
        title: "Prepare adapter",
        description: "Approve a declared third-party adapter's exact installed identity (distribution, version, content hash); a later change invalidates it. Runs and installs nothing.",
        group: Group::Configure,
        positional: &["adapter"],
        schema: input_schema::<PrepareAdapterRequest>,
        run: Body::Session(run_prepare_adapter),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

fn run_prepare_adapter<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: PrepareAdapterRequest = decode(args)?;
        let ws = s.workspace()?;
        let approval = tokio::task::spawn_blocking(move || {
            approve(
                &ws,
                &r.adapter,
                r.distribution.as_deref(),
                r.version.as_deref(),
            )
        })
        .await
        .map_err(|e| FlameoxError::internal(format!("approval task failed: {e}")))??;
        let identity = &approval.identity;
        let summary = format!(
            "adapter {} approved: {} {}, content sha256:{}",
            identity.adapter,
            identity.distribution.as_deref().unwrap_or("program"),
            identity.version.as_deref().unwrap_or("unversioned"),
            &identity.content_sha256[..identity.content_sha256.len().min(16)]
        );
        let mut value = to_value(&approval)?;
        value["next"] = serde_json::json!({ "tool": "list_capabilities", "arguments": {} });
        Ok(Answer::new(summary, value))
    })
}

fn run_start<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: StartSetupRequest = decode(args)?;
        let ws = s.workspace()?;
        let started = start_capability_setup(
            &ws,
            &r.idempotency_key,
            &r.adapters,
            &crate::detached::spawn_worker,
        )?;
        Ok(started_answer(&started))
    })
}

fn run_get<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(get_answer(s, args, SETUP_KIND))
}

fn run_cancel<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(cancel_answer(s, args, SETUP_KIND))
}
