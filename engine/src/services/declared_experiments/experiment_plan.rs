//! `flameox experiment plan` / `plan_experiment`: the trial matrix of a
//! declared `[experiments.<name>]`, without running or writing anything.
//!
//! Cells are variants (in declaration order; with `factors`, every
//! combination, factor names sorted, levels in declared order) × scaling
//! values. Optional warmup rounds (every cell once per round, cell order,
//! marked `warmup`, no block) come first; then `repetitions` randomized
//! complete blocks: each block holds every cell once, in an order shuffled
//! by one `Xoshiro256StarStar` seeded with the experiment's `seed`
//! (Fisher–Yates, block after block), so the same seed gives the same plan.
//! The first variant is the baseline of the initial comparison.
//! The plan is bound to the workload definition hash and to the digest of
//! the experiment definition plus the overrides.

use std::collections::BTreeMap;

use flameox_recipes::stats::rng::Xoshiro256StarStar;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::digest_json;
use crate::project::schema::Polarity;
use crate::project::{self, ConfigFile, ExperimentDef, Scalar};
use crate::services::capture::resolve_parameters;
use crate::workspace::Workspace;

use super::scaling_design::{DesignWarning, fixed_cost_warning, scaling_design_warnings};

/// What `experiment plan|run` asks: a declared experiment and overrides of
/// parameters no variant, factor or scaling axis sets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRequest {
    pub name: String,
    #[serde(default)]
    pub parameters: BTreeMap<String, Value>,
}

/// One variant: its name and the parameters it sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedVariant {
    pub name: String,
    pub parameters: BTreeMap<String, Scalar>,
}

/// One trial of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedTrial {
    /// `t000001`… in execution order (unique within an experiment only).
    pub trial_id: String,
    /// 0-based execution position.
    pub position: u64,
    /// The randomized block (absent for warmups).
    pub block: Option<u64>,
    /// Position within its block (or warmup round).
    pub position_in_block: u64,
    pub variant: String,
    pub warmup: bool,
    /// Every parameter of the workload for this trial.
    pub parameters: BTreeMap<String, Scalar>,
}

/// The side-effect-free plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentPlan {
    pub experiment: String,
    pub workload: String,
    pub definition_hash: String,
    /// `sha256:` of the canonical experiment definition and overrides.
    pub experiment_digest: String,
    pub seed: u64,
    pub variants: Vec<PlannedVariant>,
    /// The first declared variant.
    pub baseline_variant: String,
    pub scaling_parameter: Option<String>,
    pub scaling_values: Vec<Scalar>,
    pub repetitions: u32,
    pub warmups: u32,
    pub cells: usize,
    pub trial_count: usize,
    pub max_trials: Option<u32>,
    pub primary_metric: String,
    pub polarity: Polarity,
    pub practical_threshold: f64,
    pub confidence_level: f64,
    pub overrides: BTreeMap<String, Scalar>,
    pub trials: Vec<PlannedTrial>,
    /// `sha256:` of everything above.
    pub plan_digest: String,
    /// Design advice (a size range under 8×, with sizes to declare); not
    /// part of the digest: advice does not change what runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub design_warnings: Vec<DesignWarning>,
}

/// Variant names in the order `flameox.toml` declares them (serde's map
/// sorts them; the document keeps the order).
fn declared_variant_order(ws: &Workspace, experiment: &str) -> Vec<String> {
    let Ok(ConfigFile::Present { bytes, .. }) = project::read(ws.project_root()) else {
        return Vec::new();
    };
    let Some(doc) = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
    else {
        return Vec::new();
    };
    doc.get("experiments")
        .and_then(|e| e.get(experiment))
        .and_then(|e| e.get("variants"))
        .and_then(|v| v.as_table_like())
        .map(|t| t.iter().map(|(k, _)| k.to_owned()).collect())
        .unwrap_or_default()
}

fn variants_of(ws: &Workspace, name: &str, def: &ExperimentDef) -> Vec<PlannedVariant> {
    if let Some(variants) = &def.variants {
        let mut order = declared_variant_order(ws, name);
        order.retain(|v| variants.contains_key(v));
        for v in variants.keys() {
            if !order.contains(v) {
                order.push(v.clone());
            }
        }
        return order
            .into_iter()
            .map(|v| PlannedVariant {
                parameters: variants[&v].clone(),
                name: v,
            })
            .collect();
    }
    let mut combos: Vec<BTreeMap<String, Scalar>> = vec![BTreeMap::new()];
    for (factor, levels) in def.factors.iter().flatten() {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                levels.iter().map(move |l| {
                    let mut next = c.clone();
                    next.insert(factor.clone(), l.clone());
                    next
                })
            })
            .collect();
    }
    combos
        .into_iter()
        .map(|parameters| PlannedVariant {
            name: if parameters.is_empty() {
                "default".to_owned()
            } else {
                parameters
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            },
            parameters,
        })
        .collect()
}

/// Refuses overrides of parameters the matrix itself sets.
fn check_overrides(
    variants: &[PlannedVariant],
    scaling: Option<&str>,
    overrides: &BTreeMap<String, Value>,
) -> Result<()> {
    for name in overrides.keys() {
        let by_matrix = scaling == Some(name.as_str())
            || variants.iter().any(|v| v.parameters.contains_key(name));
        if by_matrix {
            return Err(FlameoxError::invalid_argument(
                &format!("parameters.{name}"),
                "is set by the experiment's variants, factors or scaling values; only other parameters can be overridden",
            ));
        }
    }
    Ok(())
}

/// Plans a declared experiment; see the module comment.
pub fn plan_experiment(ws: &Workspace, req: &ExperimentRequest) -> Result<ExperimentPlan> {
    let (config, _) = project::load_valid(ws.project_root())?;
    let def = project::find_experiment(&config, &req.name)?;
    let workload = project::find_workload(&config, &def.workload)?;
    let variants = variants_of(ws, &req.name, def);
    let scaling_parameter = def.scaling.as_ref().map(|s| s.parameter.clone());
    let scaling_values = def
        .scaling
        .as_ref()
        .map(|s| s.values.clone())
        .unwrap_or_default();
    check_overrides(&variants, scaling_parameter.as_deref(), &req.parameters)?;
    let overrides = resolve_parameters(workload, &req.parameters)?
        .into_iter()
        .filter(|(k, _)| req.parameters.contains_key(k))
        .collect::<BTreeMap<_, _>>();
    let mut cells: Vec<(String, BTreeMap<String, Value>)> = Vec::new();
    for v in &variants {
        let sizes: Vec<Option<&Scalar>> = if scaling_values.is_empty() {
            vec![None]
        } else {
            scaling_values.iter().map(Some).collect()
        };
        for size in sizes {
            let mut values: BTreeMap<String, Value> = req.parameters.clone();
            for (k, s) in &v.parameters {
                values.insert(k.clone(), json!(s));
            }
            if let (Some(p), Some(s)) = (&scaling_parameter, size) {
                values.insert(p.clone(), json!(s));
            }
            cells.push((v.name.clone(), values));
        }
    }
    let warmups = def.warmups.unwrap_or(0);
    let trial_count = cells.len() * (warmups as usize + def.repetitions as usize);
    if let Some(max) = def.max_trials
        && trial_count > max as usize
    {
        return Err(FlameoxError::new(
            ErrorCode::QueryBudgetExceeded,
            format!(
                "experiment `{}` needs {trial_count} trials ({} cells × ({} repetitions + {warmups} warmups)), over its max_trials of {max}",
                req.name,
                cells.len(),
                def.repetitions
            ),
        )
        .detail("trial_count", trial_count)
        .detail("max_trials", max)
        .remedy("lower repetitions, warmups or scaling values, or raise max_trials in flameox.toml"));
    }
    let mut trials = Vec::with_capacity(trial_count);
    let mut push = |cell: usize, block: Option<u64>, in_block: usize| -> Result<()> {
        let (variant, values) = &cells[cell];
        let position = trials.len() as u64;
        trials.push(PlannedTrial {
            trial_id: format!("t{:06}", position + 1),
            position,
            block,
            position_in_block: in_block as u64,
            variant: variant.clone(),
            warmup: block.is_none(),
            parameters: resolve_parameters(workload, values)?,
        });
        Ok(())
    };
    for _ in 0..warmups {
        for cell in 0..cells.len() {
            push(cell, None, cell)?;
        }
    }
    let mut rng = Xoshiro256StarStar::from_seed(def.seed);
    for block in 0..u64::from(def.repetitions) {
        let mut order: Vec<usize> = (0..cells.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for (in_block, cell) in order.into_iter().enumerate() {
            push(cell, Some(block), in_block)?;
        }
    }
    let experiment_digest = format!(
        "sha256:{}",
        digest_json(&json!({ "definition": def, "overrides": overrides }))
    );
    let mut plan = ExperimentPlan {
        experiment: req.name.clone(),
        workload: def.workload.clone(),
        definition_hash: project::definition_hash(workload),
        experiment_digest,
        seed: def.seed,
        baseline_variant: variants.first().map(|v| v.name.clone()).unwrap_or_default(),
        variants,
        scaling_parameter,
        scaling_values,
        repetitions: def.repetitions,
        warmups,
        cells: cells.len(),
        trial_count,
        max_trials: def.max_trials,
        primary_metric: def.primary_metric.clone(),
        polarity: def.polarity,
        practical_threshold: def.practical_threshold,
        confidence_level: def.confidence_level,
        overrides,
        trials,
        plan_digest: String::new(),
        design_warnings: Vec::new(),
    };
    plan.plan_digest = format!(
        "sha256:{}",
        digest_json(&serde_json::to_value(&plan).unwrap_or_default())
    );
    if let Some(parameter) = &plan.scaling_parameter {
        plan.design_warnings = scaling_design_warnings(parameter, &plan.scaling_values);
        plan.design_warnings.extend(fixed_cost_warning(
            ws,
            &plan.workload,
            parameter,
            &plan.scaling_values,
        ));
    }
    Ok(plan)
}
