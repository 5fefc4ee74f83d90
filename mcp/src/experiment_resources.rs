//! The `flameox://experiments/…` resources: an experiment's receipt, the
//! first page of its trials, and one trial.

use flameox_engine::Workspace;
use flameox_engine::error::FlameoxError;
use flameox_engine::services::experiments::{
    TrialsRequest, get_experiment, get_trial, list_trials,
};
use serde_json::Value;

use flameox_engine::operations::to_value;

/// The resource templates below: `(uri template, name)`.
pub const RESOURCE_TEMPLATES: [(&str, &str); 3] = [
    ("flameox://experiments/{experiment_id}", "experiment"),
    (
        "flameox://experiments/{experiment_id}/trials",
        "experiment trials (first page and next_cursor)",
    ),
    (
        "flameox://experiments/{experiment_id}/trials/{trial_id}",
        "experiment trial",
    ),
];

/// `flameox://experiments/{id}`, `…/{id}/trials` (first page and cursor)
/// and `…/{id}/trials/{trial_id}`; `None` for other URIs.
pub fn resource(ws: &Workspace, uri: &str) -> Option<Result<Value, FlameoxError>> {
    let rest = uri.strip_prefix("flameox://experiments/")?;
    let mut parts = rest.splitn(3, '/');
    let experiment_id = parts.next().unwrap_or_default();
    Some(match (parts.next(), parts.next()) {
        (None, _) => get_experiment(ws, experiment_id).and_then(|v| to_value(&v)),
        (Some("trials"), None) => list_trials(
            ws,
            &TrialsRequest {
                experiment_id: experiment_id.to_owned(),
                ..Default::default()
            },
        )
        .and_then(|page| to_value(&page)),
        (Some("trials"), Some(trial_id)) => {
            get_trial(ws, trial_id, Some(experiment_id)).and_then(|t| to_value(&t))
        }
        _ => Err(FlameoxError::invalid_argument("uri", "unknown resource")),
    })
}
