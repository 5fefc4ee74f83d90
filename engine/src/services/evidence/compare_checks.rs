//! What `analyze compare` checks before it trusts a comparison — the
//! compatibility of the two sets' runs — and the per-frame profile changes
//! it reports beside the estimate.
//!
//! Compatibility rules (each check is listed in the result):
//! - collector name differs across sides → `COMPARISON_INVALID`;
//! - collector version, workload definition or environment differs (across
//!   or within sides) → validity downgraded to exploratory;
//! - source state mixed within a side → downgraded; differing *between*
//!   sides is what a comparison of two revisions expects (no effect);
//! - a used run whose validation did not pass → downgraded.
//!   Fields no run records are `not_recorded` (no effect).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::services::run_set_samples::{FrameShare, leading_frames};
use crate::services::run_sets::RunSetMember;
use flameox_recipes::stats::median;

/// Profile changes listed, largest share change first.
pub const PROFILE_CHANGES_LIMIT: usize = 20;

/// One compatibility check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompatibilityCheck {
    pub check: String,
    /// `consistent`, `differs` or `not_recorded`.
    pub status: String,
    /// `none`, `downgrades` or `invalidates`.
    pub effect: String,
    pub baseline: Vec<String>,
    pub candidate: Vec<String>,
}

impl CompatibilityCheck {
    pub fn invalidates(&self) -> bool {
        self.effect == "invalidates"
    }
    pub fn downgrades(&self) -> bool {
        self.effect == "downgrades"
    }
}

fn values(members: &[&RunSetMember], f: impl Fn(&RunSetMember) -> Option<String>) -> Vec<String> {
    let set: BTreeSet<String> = members.iter().filter_map(|m| f(m)).collect();
    set.into_iter().collect()
}

/// `within`: what a difference within one side does; `across`: between sides.
fn check(
    name: &str,
    base: Vec<String>,
    cand: Vec<String>,
    within: &str,
    across: &str,
) -> CompatibilityCheck {
    let (status, effect) = if base.is_empty() && cand.is_empty() {
        ("not_recorded", "none")
    } else if base.len() > 1 || cand.len() > 1 {
        ("differs", within)
    } else if base != cand {
        ("differs", across)
    } else {
        ("consistent", "none")
    };
    CompatibilityCheck {
        check: name.to_owned(),
        status: status.to_owned(),
        effect: effect.to_owned(),
        baseline: base,
        candidate: cand,
    }
}

/// The checks over the runs used on each side.
pub fn compatibility(
    base: &[&RunSetMember],
    cand: &[&RunSetMember],
    unit: &str,
) -> Vec<CompatibilityCheck> {
    let collector_name = |m: &RunSetMember| m.collector.as_ref().map(|c| c.name.clone());
    let collector = |m: &RunSetMember| {
        m.collector
            .as_ref()
            .map(|c| format!("{} {}", c.name, c.version))
    };
    let validation = |m: &RunSetMember| Some(m.status.validation.clone());
    let mut checks = vec![CompatibilityCheck {
        check: "metric_unit".into(),
        status: "consistent".into(),
        effect: "none".into(),
        baseline: vec![unit.to_owned()],
        candidate: vec![unit.to_owned()],
    }];
    checks.push(check(
        "collector_name",
        values(base, collector_name),
        values(cand, collector_name),
        "invalidates",
        "invalidates",
    ));
    checks.push(check(
        "collector_version",
        values(base, collector),
        values(cand, collector),
        "downgrades",
        "downgrades",
    ));
    for (name, get) in [
        (
            "workload_definition",
            (|m: &RunSetMember| m.workload_definition.clone()) as fn(&RunSetMember) -> _,
        ),
        ("environment", |m: &RunSetMember| m.environment_id.clone()),
    ] {
        checks.push(check(
            name,
            values(base, get),
            values(cand, get),
            "downgrades",
            "downgrades",
        ));
    }
    checks.push(check(
        "source_state",
        values(base, |m| m.source_state_id.clone()),
        values(cand, |m| m.source_state_id.clone()),
        "downgrades",
        "none",
    ));
    let mut validated = check(
        "validation",
        values(base, validation),
        values(cand, validation),
        "downgrades",
        "downgrades",
    );
    let passed = |v: &Vec<String>| v.iter().all(|s| s == "passed");
    if passed(&validated.baseline) && passed(&validated.candidate) {
        validated.status = "consistent".into();
        validated.effect = "none".into();
    } else {
        validated.effect = "downgrades".into();
    }
    checks.push(validated);
    checks
}

/// One frame's share on each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameChange {
    pub frame: String,
    pub function: String,
    /// Median over the side's runs of the frame's share of self value.
    pub baseline_share: f64,
    pub candidate_share: f64,
    pub share_delta: f64,
}

/// Per-frame changes, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileChanges {
    /// `available`, or `unavailable` with `reason`.
    pub status: String,
    pub reason: Option<String>,
    pub metric: Option<String>,
    pub frames_compared: usize,
    pub rows: Vec<FrameChange>,
    pub truncated: bool,
}

impl ProfileChanges {
    pub fn unavailable(reason: &str) -> ProfileChanges {
        ProfileChanges {
            status: "unavailable".into(),
            reason: Some(reason.into()),
            metric: None,
            frames_compared: 0,
            rows: Vec::new(),
            truncated: false,
        }
    }
}

fn median_share(frame: &str, runs: &[&BTreeMap<String, FrameShare>]) -> f64 {
    let shares: Vec<f64> = runs
        .iter()
        .map(|r| r.get(frame).map_or(0.0, |s| s.share))
        .collect();
    median(&shares).unwrap_or(0.0)
}

/// Top frames by absolute change of their median self share.
pub fn profile_changes(
    metric: &str,
    base: &[&BTreeMap<String, FrameShare>],
    cand: &[&BTreeMap<String, FrameShare>],
) -> ProfileChanges {
    let frames = leading_frames(base.iter().chain(cand).copied());
    let mut rows: Vec<FrameChange> = frames
        .into_iter()
        .map(|(frame, function)| {
            let baseline_share = median_share(&frame, base);
            let candidate_share = median_share(&frame, cand);
            FrameChange {
                frame,
                function,
                baseline_share,
                candidate_share,
                share_delta: candidate_share - baseline_share,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.share_delta
            .abs()
            .total_cmp(&a.share_delta.abs())
            .then_with(|| a.frame.cmp(&b.frame))
    });
    let frames_compared = rows.len();
    let truncated = rows.len() > PROFILE_CHANGES_LIMIT;
    rows.truncate(PROFILE_CHANGES_LIMIT);
    ProfileChanges {
        status: "available".into(),
        reason: None,
        metric: Some(metric.to_owned()),
        frames_compared,
        rows,
        truncated,
    }
}
