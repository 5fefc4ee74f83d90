//! The evidence of a run set's members at one pinned commit: which
//! extractions belong to which member run, the metric names each run has,
//! the non-warmup samples of one metric per run, and each run's frame self
//! shares. Shared by `analyze compare` and `analyze scaling`; also maps the
//! statistics kernels' `StatsError` to typed engine errors.

use std::collections::{BTreeMap, BTreeSet};

use flameox_recipes::measurements::MeasurementScope;
use flameox_recipes::run_set_evidence;
use flameox_recipes::stats::StatsError;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::query::{PinnedSession, run_budgeted};
use crate::runs;
use crate::services::run_sets::RunSetMember;
use crate::workspace::Workspace;

/// Frames considered per analysis (by largest share), before any test.
pub const FRAMES_CONSIDERED: usize = 200;

/// A member run's extractions in the pinned commit, and the reverse map.
pub struct MemberEvidence {
    pub scope: MeasurementScope,
    /// `(run_id on the rows, artifact_id)` → member runs reading it.
    owners: BTreeMap<(String, String), Vec<String>>,
}

/// One frame's share of its run's total self value.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameShare {
    pub function: String,
    pub share: f64,
}

/// A `StatsError` as the engine reports it: bad settings are
/// `INVALID_ARGUMENTS`; data that cannot support the statistic is
/// `COMPARISON_INVALID`.
pub fn stats_error(err: StatsError) -> FlameoxError {
    let message = err.to_string();
    match err {
        StatsError::InvalidConfidenceLevel(_) => {
            FlameoxError::invalid_argument("confidence", message)
                .remedy("pass a confidence level strictly between 0 and 1, e.g. 0.95")
        }
        StatsError::InvalidThreshold(_) => FlameoxError::invalid_argument("threshold", message)
            .remedy("pass a practical threshold in [0, 1), e.g. 0.02 for 2 %"),
        StatsError::TooFewResamples { .. } => FlameoxError::invalid_argument("resamples", message),
        StatsError::TooFewPoints { .. } => FlameoxError::new(ErrorCode::ComparisonInvalid, message)
            .remedy("add runs at more parameter values (at least 5 runs over 3 distinct values)"),
        StatsError::NonPositive { .. } | StatsError::NonFinite { .. } => {
            FlameoxError::new(ErrorCode::ComparisonInvalid, message)
                .remedy("the metric must be positive and finite in every run used")
        }
        StatsError::Empty { .. }
        | StatsError::LengthMismatch { .. }
        | StatsError::InvalidProbability { .. } => {
            FlameoxError::new(ErrorCode::ComparisonInvalid, message)
        }
    }
}

/// Measurement name → units seen, per member run.
pub type MetricNames = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The one unit `metric` has in `runs`; several → `COMPARISON_INVALID`.
pub fn single_unit<'a>(
    names: &MetricNames,
    runs: impl Iterator<Item = &'a str>,
    metric: String,
) -> Result<(String, String)> {
    let mut units: BTreeSet<String> = BTreeSet::new();
    for run in runs {
        if let Some(seen) = names.get(run).and_then(|n| n.get(&metric)) {
            units.extend(seen.iter().cloned());
        }
    }
    let mut units: Vec<String> = units.into_iter().collect();
    if units.len() != 1 {
        return Err(FlameoxError::new(
            ErrorCode::ComparisonInvalid,
            format!("metric {metric} has different units across the runs"),
        )
        .detail("units", units));
    }
    Ok((metric, units.remove(0)))
}

impl MemberEvidence {
    /// The extractions of `members` in the session's commit.
    pub fn new(
        ws: &Workspace,
        session: &PinnedSession,
        members: &[&RunSetMember],
    ) -> Result<MemberEvidence> {
        let mut owners: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for member in members {
            let run = runs::read_run(ws, &member.run_id)?;
            for g in session.snapshot.generations_listed(&run.generation_ids) {
                let key = (g.inputs.run_id.clone(), g.inputs.artifact_id.clone());
                let runs = owners.entry(key).or_default();
                if !runs.contains(&member.run_id) {
                    runs.push(member.run_id.clone());
                }
            }
        }
        Ok(MemberEvidence {
            scope: MeasurementScope::Extractions(owners.keys().cloned().collect()),
            owners,
        })
    }

    fn owners_of(&self, run_id: &str, artifact_id: &str) -> &[String] {
        self.owners
            .get(&(run_id.to_owned(), artifact_id.to_owned()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Per member run: measurement name → units seen.
    pub async fn metric_names(&self, session: &PinnedSession) -> Result<MetricNames> {
        let mut out = MetricNames::new();
        if self.owners.is_empty() {
            return Ok(out);
        }
        let rows = run_budgeted(
            session,
            run_set_evidence::metric_names(&session.ctx, &self.scope),
        )
        .await?;
        for row in rows {
            for run in self.owners_of(&row.run_id, &row.artifact_id) {
                out.entry(run.clone())
                    .or_default()
                    .entry(row.name.clone())
                    .or_default()
                    .insert(row.unit.clone());
            }
        }
        Ok(out)
    }

    /// Per member run: the metric's non-warmup samples, in sample order.
    pub async fn samples(
        &self,
        session: &PinnedSession,
        metric: &str,
    ) -> Result<BTreeMap<String, Vec<f64>>> {
        let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        if self.owners.is_empty() {
            return Ok(out);
        }
        let rows = run_budgeted(
            session,
            run_set_evidence::metric_samples(&session.ctx, &self.scope, metric),
        )
        .await?;
        for row in rows {
            for run in self.owners_of(&row.run_id, &row.artifact_id) {
                out.entry(run.clone()).or_default().push(row.value);
            }
        }
        Ok(out)
    }

    /// The `frame_totals` metric every member run has (the preferred one
    /// when several), or `None` when some member has no profile.
    pub async fn shared_frame_metric(
        &self,
        session: &PinnedSession,
        members: &[&RunSetMember],
    ) -> Result<Option<String>> {
        if self.owners.is_empty() {
            return Ok(None);
        }
        let rows = run_budgeted(
            session,
            run_set_evidence::frame_metrics(&session.ctx, &self.scope),
        )
        .await?;
        let mut by_run: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (run_id, artifact_id, metric) in &rows {
            for run in self.owners_of(run_id, artifact_id) {
                by_run
                    .entry(run.as_str())
                    .or_default()
                    .insert(metric.clone());
            }
        }
        let mut shared: Option<BTreeSet<String>> = None;
        for member in members {
            let metrics = by_run.remove(member.run_id.as_str()).unwrap_or_default();
            shared = Some(match shared {
                None => metrics,
                Some(prev) => prev.intersection(&metrics).cloned().collect(),
            });
        }
        let shared: Vec<String> = shared.unwrap_or_default().into_iter().collect();
        if shared.is_empty() {
            return Ok(None);
        }
        Ok(flameox_recipes::hotspots::choose_metric(None, &shared).ok())
    }

    /// Per member run: each frame's share of the run's total self value.
    pub async fn frame_shares(
        &self,
        session: &PinnedSession,
        metric: &str,
    ) -> Result<BTreeMap<String, BTreeMap<String, FrameShare>>> {
        let rows = run_budgeted(
            session,
            run_set_evidence::frame_self_totals(&session.ctx, &self.scope, metric),
        )
        .await?;
        let mut totals: BTreeMap<String, BTreeMap<String, (String, i64)>> = BTreeMap::new();
        for row in rows {
            for run in self.owners_of(&row.run_id, &row.artifact_id) {
                let entry = totals
                    .entry(run.clone())
                    .or_default()
                    .entry(row.frame.clone())
                    .or_insert_with(|| (row.function.clone(), 0));
                entry.1 += row.self_value;
            }
        }
        Ok(totals
            .into_iter()
            .map(|(run, frames)| {
                let total: i64 = frames.values().map(|(_, v)| *v).sum();
                let shares = frames
                    .into_iter()
                    .map(|(frame, (function, value))| {
                        let share = if total > 0 {
                            value as f64 / total as f64
                        } else {
                            0.0
                        };
                        (frame, FrameShare { function, share })
                    })
                    .collect();
                (run, shares)
            })
            .collect())
    }
}

/// The frames with the largest summed share over runs (ties by key), at
/// most [`FRAMES_CONSIDERED`]: the candidates of profile comparisons.
pub fn leading_frames<'a>(
    shares: impl Iterator<Item = &'a BTreeMap<String, FrameShare>>,
) -> Vec<(String, String)> {
    let mut summed: BTreeMap<String, (String, f64)> = BTreeMap::new();
    for run in shares {
        for (frame, s) in run {
            let entry = summed
                .entry(frame.clone())
                .or_insert_with(|| (s.function.clone(), 0.0));
            entry.1 += s.share;
        }
    }
    let mut ranked: Vec<(String, String, f64)> = summed
        .into_iter()
        .map(|(frame, (function, total))| (frame, function, total))
        .collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(FRAMES_CONSIDERED);
    ranked.into_iter().map(|(f, n, _)| (f, n)).collect()
}
