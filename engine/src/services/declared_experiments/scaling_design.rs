//! Advice on an experiment's scaling sizes before anything runs: sizes
//! that span less than 8× cannot tell n^1.5 from n² once a fixed cost is
//! in the time (docs/statistics.md, "Offset power law"), so the plan says
//! so and proposes a doubling ladder from the smallest size; and when the
//! workload's earlier trials measured its fixed cost, a smallest size that
//! would run for less than ten times it gets a warning and a ladder that
//! starts where the growing part is nine times the fixed cost.

use flameox_recipes::stats::{ScalingPoint, fit_scaling};
use serde::{Deserialize, Serialize};

use crate::project::Scalar;
use crate::records::{self, RecordKind};
use crate::services::experiment_records::ExperimentProtocol;
use crate::services::experiments::{TrialsRequest, list_trials};
use crate::workspace::Workspace;

/// The smallest span (largest / smallest size) the plan accepts silently.
pub const MIN_SPAN: f64 = 8.0;

/// A design problem the plan found, with what to declare instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignWarning {
    /// `narrow_size_range`.
    pub code: String,
    pub message: String,
    /// Sizes that fix it (same type as declared: integers stay integers).
    pub proposed_values: Vec<Scalar>,
}

fn numeric(value: &Scalar) -> Option<f64> {
    match value {
        Scalar::Int(i) => Some(*i as f64),
        Scalar::Float(f) => Some(*f),
        _ => None,
    }
}

/// The warnings for `values` of the scaling `parameter` (none when they
/// are not all positive numbers).
pub fn scaling_design_warnings(parameter: &str, values: &[Scalar]) -> Vec<DesignWarning> {
    let Some(sizes) = values.iter().map(numeric).collect::<Option<Vec<f64>>>() else {
        return Vec::new();
    };
    if sizes.len() < 2 || sizes.iter().any(|&s| s <= 0.0 || !s.is_finite()) {
        return Vec::new();
    }
    let min = sizes.iter().copied().fold(f64::INFINITY, f64::min);
    let max = sizes.iter().copied().fold(0.0_f64, f64::max);
    let span = max / min;
    if span >= MIN_SPAN {
        return Vec::new();
    }
    let integers = values.iter().all(|v| matches!(v, Scalar::Int(_)));
    // Doublings from the smallest size to at least 16×, five sizes or more.
    let count = sizes.len().max(5);
    let ratio = 16f64.powf(1.0 / (count - 1) as f64);
    let proposed: Vec<Scalar> = (0..count)
        .map(|i| {
            let size = min * ratio.powi(i as i32);
            if integers {
                Scalar::Int(size.round() as i64)
            } else {
                Scalar::Float((size * 1e6).round() / 1e6)
            }
        })
        .collect();
    let shown: Vec<String> = proposed.iter().map(|v| v.to_string()).collect();
    vec![DesignWarning {
        code: "narrow_size_range".to_owned(),
        message: format!(
            "{parameter} spans only {span:.1}× ({min}..{max}); under {MIN_SPAN}× a fixed cost \
             (start-up, allocation) cannot be told from slower growth and the exponent's \
             interval stays wide: declare values = [{}] (16×)",
            shown.join(", ")
        ),
        proposed_values: proposed,
    }]
}

/// At most this many earlier trials are read for the fixed cost.
const EARLIER_TRIALS_LIMIT: usize = 5000;

/// The workload's fixed cost from its earlier trials (wall time of
/// completed, non-warmup trials of any experiment on the same workload and
/// scaling parameter, fitted with the offset power law), and a warning
/// when the smallest declared size would run for less than ten times it.
pub fn fixed_cost_warning(
    ws: &Workspace,
    workload: &str,
    parameter: &str,
    values: &[Scalar],
) -> Option<DesignWarning> {
    let sizes: Vec<f64> = values.iter().filter_map(numeric).collect();
    let smallest = sizes.iter().copied().fold(f64::INFINITY, f64::min);
    if sizes.len() != values.len() || !(smallest.is_finite() && smallest > 0.0) {
        return None;
    }
    let mut points = Vec::new();
    let mut sources = Vec::new();
    for id in records::list_record_ids(ws, RecordKind::Experiments) {
        let Ok(protocol) =
            records::read_record::<ExperimentProtocol>(ws, RecordKind::Experiments, &id)
        else {
            continue;
        };
        let plan = &protocol.plan;
        if plan.workload != workload || plan.scaling_parameter.as_deref() != Some(parameter) {
            continue;
        }
        let mut cursor = None;
        loop {
            let request = TrialsRequest {
                experiment_id: id.clone(),
                cursor: cursor.clone(),
                limit: None,
            };
            let Ok(page) = list_trials(ws, &request) else {
                break;
            };
            for trial in &page.trials {
                let n = trial.parameters.get(parameter).and_then(numeric);
                if let (Some(n), Some(ns), false, "completed") =
                    (n, trial.wall_time_ns, trial.warmup, trial.status.as_str())
                    && n > 0.0
                    && ns > 0
                {
                    points.push(ScalingPoint {
                        n,
                        value: ns as f64 / 1e9,
                    });
                }
            }
            if page.next_cursor.is_none() || points.len() >= EARLIER_TRIALS_LIMIT {
                break;
            }
            cursor = page.next_cursor;
        }
        sources.push(id);
        if points.len() >= EARLIER_TRIALS_LIMIT {
            break;
        }
    }
    let fit = fit_scaling(&points, 0.95).ok()?;
    let offset = fit.offset_power_law?;
    let (a, b, k) = (offset.fixed_cost, offset.b, offset.exponent.estimate);
    if !(a > 0.0 && b > 0.0) {
        return None;
    }
    let predicted = a + b * smallest.powf(k);
    if predicted >= 10.0 * a {
        return None;
    }
    // The size where the growing part is nine times the fixed cost, up to
    // two significant digits; then doublings to the 8× span.
    let exact = (9.0 * a / b).powf(1.0 / k);
    let magnitude = 10f64.powf(exact.log10().floor() - 1.0);
    let start = (exact / magnitude).ceil() * magnitude;
    let largest = start * 8.0;
    let integers = values.iter().all(|v| matches!(v, Scalar::Int(_)));
    let proposed: Vec<Scalar> = (0..4)
        .map(|i| {
            let size = start * 2f64.powi(i);
            if integers {
                Scalar::Int(size.ceil() as i64)
            } else {
                Scalar::Float((size * 1e6).ceil() / 1e6)
            }
        })
        .collect();
    let shown: Vec<String> = proposed.iter().map(|v| v.to_string()).collect();
    Some(DesignWarning {
        code: "fixed_cost_dominates".to_owned(),
        message: format!(
            "at {parameter} = {smallest} a trial takes about {predicted:.3} s, under ten times \
             the workload's fixed cost of {a:.3} s (measured over {} earlier trials of {}): the \
             growth is poorly determined there; start at {parameter} ≥ {} — values = [{}] \
             (about {:.1} s per trial at the largest)",
            points.len(),
            sources.join(", "),
            shown.first().cloned().unwrap_or_default(),
            shown.join(", "),
            a + b * largest.powf(k),
        ),
        proposed_values: proposed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_range_gets_a_doubling_ladder() {
        let declared = [Scalar::Int(1000), Scalar::Int(2000), Scalar::Int(4000)];
        let warnings = scaling_design_warnings("n", &declared);
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            warnings[0].proposed_values,
            [1000, 2000, 4000, 8000, 16000].map(Scalar::Int)
        );
        let wide = [Scalar::Int(500), Scalar::Int(1000), Scalar::Int(4000)];
        assert!(scaling_design_warnings("n", &wide).is_empty());
        let labels = [Scalar::Str("small".into()), Scalar::Str("large".into())];
        assert!(scaling_design_warnings("n", &labels).is_empty());
    }
}
