//! The sentences that go with a scaling conclusion, so nobody reads
//! "grows like n^1.6" about a quadratic algorithm with a start-up cost:
//! an exponent interval that excludes the named model's own exponent is
//! explained, a fixed cost that hides the growth at small sizes is named
//! with the sizes that would determine it, and an inconclusive answer says
//! which measurement decides.

use super::scaling::{ScalingConclusion, ScalingFit};
use super::scaling_model::ScalingModel;

fn name(model: ScalingModel) -> &'static str {
    model.label()
}

fn number(v: f64) -> String {
    if v.abs() >= 1e5 || (v != 0.0 && v.abs() < 1e-3) {
        format!("{v:.3e}")
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

/// The notes of `fit` (its `notes` field).
pub fn notes(fit: &ScalingFit, target_half_width: f64) -> Vec<String> {
    let mut notes = Vec::new();
    let named = match fit.conclusion {
        ScalingConclusion::Best { model, .. } => model,
        ScalingConclusion::Inconclusive { best, .. } => best,
    };
    let growth = fit.growth_exponent;
    let plain = fit.power_law_exponent;
    if let Some(e) = named.power_law_exponent() {
        let outside = |lower: f64, upper: f64| e < lower || e > upper;
        if outside(growth.lower, growth.upper) {
            notes.push(format!(
                "{} names exponent {e}, but the {} interval on k is [{}, {}]: {} describes these \
                 sizes within the noise while the growing part grows like n^{}; read it as an \
                 approximation inside n = {}..{}",
                name(named),
                name(growth.model),
                number(growth.lower),
                number(growth.upper),
                name(named),
                number(growth.estimate),
                number(fit.supported_range.min_n),
                number(fit.supported_range.max_n),
            ));
        } else if growth.model == ScalingModel::OffsetPowerLaw && outside(plain.lower, plain.upper)
        {
            let share = fit
                .offset_power_law
                .as_ref()
                .and_then(|o| o.fixed_cost_share.first())
                .map_or(0.0, |s| s.share);
            notes.push(format!(
                "the plain power law's k = {} [{}, {}] excludes {e} because a fixed cost ({:.0} % \
                 of the time at n = {}) bends it down; with the fixed cost fitted, k = {} [{}, {}] \
                 holds it",
                number(plain.estimate),
                number(plain.lower),
                number(plain.upper),
                share * 100.0,
                number(fit.supported_range.min_n),
                number(growth.estimate),
                number(growth.lower),
                number(growth.upper),
            ));
        }
    }
    if let Some(offset) = &fit.offset_power_law {
        if offset.exponent_poorly_determined {
            let share = offset.fixed_cost_share.first().map_or(0.0, |s| s.share);
            let advice = match &offset.sizes_for_width {
                Some(w) => format!(
                    "measuring up to n = {} ({} runs per size: {}) would bring it to ±{}",
                    number(w.max_n),
                    w.runs_per_size,
                    w.sizes
                        .iter()
                        .map(|s| number(*s))
                        .collect::<Vec<_>>()
                        .join(", "),
                    number(target_half_width),
                ),
                None => format!(
                    "the measured sizes still give ±{} or better",
                    number(target_half_width)
                ),
            };
            notes.push(format!(
                "the fixed cost ({} per run) is {:.0} % of the time at n = {}: the growth \
                 exponent is poorly determined at the small sizes; {advice}",
                number(offset.fixed_cost),
                share * 100.0,
                number(fit.supported_range.min_n),
            ));
        }
        if !offset.exponent.lower_bounded || !offset.exponent.upper_bounded {
            notes.push(format!(
                "the data do not bound k on {} inside {}..{}: the interval's open end is the \
                 search range, not a measurement",
                match (offset.exponent.lower_bounded, offset.exponent.upper_bounded) {
                    (false, false) => "either side",
                    (false, true) => "the low side",
                    _ => "the high side",
                },
                number(super::offset_power_law::K_MIN),
                number(super::offset_power_law::K_MAX),
            ));
        }
    }
    if let ScalingConclusion::Inconclusive {
        best, runner_up, ..
    } = fit.conclusion
    {
        notes.push(match &fit.separating_experiment {
            Some(x) => {
                let predicted: Vec<String> = x
                    .predictions
                    .iter()
                    .map(|(m, v)| format!("{} predicts {}", name(*m), number(*v)))
                    .collect();
                format!(
                    "inconclusive between {} and {}: measure n = {} ({} runs) to separate them \
                     — {} ({:.1} noise units apart)",
                    name(best),
                    name(runner_up),
                    number(x.n),
                    x.runs,
                    predicted.join(", "),
                    x.separation_sigmas,
                )
            }
            None => format!(
                "inconclusive between {} and {}: no size up to 64× the largest separates them, so \
                 they describe the same growth over any size worth measuring",
                name(best),
                name(runner_up)
            ),
        });
    }
    notes
}
