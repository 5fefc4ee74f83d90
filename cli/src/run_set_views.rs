//! How a person reads the run-set answers: a frozen set's members, a paired
//! comparison with its interval and checks, a scaling fit, a record.

use flameox_engine::recipes::stats::{ScalingConclusion, ScalingModel};
use flameox_engine::services::analysis_records::RecordOutcome;
use flameox_engine::services::compare::ComparisonResult;
use flameox_engine::services::run_sets::FreezeResult;
use flameox_engine::services::scaling::ScalingResult;

use crate::render::{Table, cut};

pub(crate) fn freeze(r: &FreezeResult) -> String {
    let set = &r.run_set;
    let mut t = Table::new(&["run", "variant", "block", "status", "parameters"], &[]);
    for m in &set.members {
        t.row(vec![
            m.run_id.clone(),
            m.variant.clone().unwrap_or_default(),
            m.block.clone(),
            if m.failed { "failed" } else { "ok" }.to_owned(),
            cut(&serde_json::json!(m.parameters).to_string(), 40),
        ]);
    }
    format!(
        "{} run set {} ({} runs, blocks by {:?})\n",
        if r.created {
            "froze"
        } else {
            "already frozen:"
        },
        set.run_set_id,
        set.members.len(),
        set.pairing_key
    ) + &t.render()
}

fn percent(x: f64) -> String {
    format!("{:+.2} %", x * 100.0)
}

pub(crate) fn record(o: &RecordOutcome) -> String {
    format!(
        "{} {} {} (commit {}, result digest {})\n",
        if o.created {
            "recorded"
        } else {
            "already recorded:"
        },
        o.record.kind,
        o.record.record_id,
        o.record.commit_id,
        o.record.result_digest
    )
}

pub(crate) fn compare(r: &ComparisonResult) -> String {
    let interval = r
        .estimate
        .relative_interval
        .map(|i| format!("[{}, {}]", percent(i.lower), percent(i.upper)))
        .unwrap_or_else(|| "unavailable".to_owned());
    let mut out = format!(
        "{}: {:?} ({:?}) — change {} {} at {:.0} % confidence, threshold {}\n",
        r.metric,
        r.decision,
        r.validity,
        percent(r.estimate.relative_change),
        interval,
        r.estimate.confidence_level * 100.0,
        percent(r.estimate.practical_threshold),
    );
    out += &format!(
        "pairs: {} by {:?}; baseline {} of {} runs used ({} failed), candidate {} of {} ({} failed)\n",
        r.pairing.pairs.len(),
        r.pairing.method,
        r.baseline.used,
        r.baseline.attempted,
        r.baseline.failed,
        r.candidate.used,
        r.candidate.attempted,
        r.candidate.failed
    );
    for reason in &r.validity_reasons {
        out += &format!("  exploratory: {reason}\n");
    }
    if let Some(s) = &r.sample_level {
        out += &format!(
            "  sample level (exploratory, ignores run-to-run variation): {} [{}, {}] → {:?}\n",
            percent(s.relative_change),
            percent(s.relative_interval.lower),
            percent(s.relative_interval.upper),
            s.decision
        );
    }
    for row in r.profile_changes.rows.iter().take(5) {
        out += &format!(
            "  frame {}: share {:.1} % → {:.1} %\n",
            cut(&row.function, 50),
            row.baseline_share * 100.0,
            row.candidate_share * 100.0
        );
    }
    out
}

pub(crate) fn scaling(r: &ScalingResult) -> String {
    let mut out = format!("{} vs {} ({})\n", r.metric, r.parameter, r.unit);
    for v in &r.variants {
        let conclusion = match v.fit.as_ref().map(|f| f.conclusion) {
            Some(ScalingConclusion::Best { model, .. }) => model.label().to_owned(),
            Some(ScalingConclusion::Inconclusive {
                best, runner_up, ..
            }) => format!("inconclusive ({} vs {})", best.label(), runner_up.label()),
            None => format!("no fit: {}", v.fit_unavailable.clone().unwrap_or_default()),
        };
        out += &format!(
            "variant {}: {} runs, {}\n",
            v.variant.as_deref().unwrap_or("(none)"),
            v.runs,
            conclusion
        );
        if let Some(fit) = &v.fit {
            let k = fit.growth_exponent;
            let source = match k.model {
                ScalingModel::OffsetPowerLaw => "with its fixed cost fitted",
                _ => "plain power law",
            };
            out += &format!(
                "  growth exponent k = {:.3} [{:.3}, {:.3}] ({source}), supported n in [{}, {}]\n",
                k.estimate, k.lower, k.upper, fit.supported_range.min_n, fit.supported_range.max_n
            );
            if let Some(o) = &fit.offset_power_law {
                let shares: Vec<String> = o
                    .fixed_cost_share
                    .iter()
                    .map(|s| format!("{:.0} % at n={}", s.share * 100.0, s.n))
                    .collect();
                out += &format!(
                    "  fixed cost {:.4e} {} per run: {}\n",
                    o.fixed_cost,
                    r.unit,
                    shares.join(", ")
                );
            }
            let plain = fit.power_law_exponent;
            out += &format!(
                "  plain power law k = {:.3} [{:.3}, {:.3}]\n",
                plain.estimate, plain.lower, plain.upper
            );
            for note in &fit.notes {
                out += &format!("  note: {note}\n");
            }
        }
        let mut t = Table::new(&["n", "runs", "median", "MAD"], &[0, 1, 2, 3]);
        for p in &v.values {
            t.row(vec![
                p.n.to_string(),
                p.runs.to_string(),
                format!("{:.6e}", p.median),
                format!("{:.3e}", p.mad_normal),
            ]);
        }
        out += &t.render();
        for h in &v.hotspots.rows {
            let growth = match &h.growth_exponent {
                Some(k) => format!(
                    ", own time k = {:.2} [{:.2}, {:.2}]: {}",
                    k.estimate,
                    k.lower,
                    k.upper,
                    match h.growth_vs_total.as_str() {
                        "faster" => "grows faster than the whole",
                        "slower" => "grows slower than the whole",
                        "same" => "grows like the whole",
                        _ => "growth unknown",
                    }
                ),
                None => String::new(),
            };
            out += &format!(
                "  growing: {} (ρ {:.2}, q {:.3}{growth})\n",
                cut(&h.function, 50),
                h.rho,
                h.q_value
            );
        }
    }
    out
}
