//! The terminal's views of derived evidence: a reduction's plan (what it
//! will read and make, and the command that runs it) and a comparison of
//! two artifact pipelines (frames whose shares differ, frames one side
//! lacks, top-frame agreement; every share names its denominator).

use flameox_engine::services::pipelines::PipelineComparison;
use flameox_engine::services::pipelines::comparison::FrameShare;
use flameox_engine::services::reductions::ReductionPlan;

pub(crate) fn reduction_plan(p: &ReductionPlan) -> String {
    let mut out = format!(
        "{} of {}{}: {} inputs, {} rows ({}) of {}, about {:.1} s\n",
        p.kind.name(),
        p.target,
        p.run_id
            .as_deref()
            .filter(|r| *r != p.target)
            .map(|r| format!(" (run {r})"))
            .unwrap_or_default(),
        p.inputs_total,
        p.rows_to_read,
        crate::render::bytes(p.bytes_to_read),
        p.metric,
        p.estimated_seconds
    );
    out += &format!("  estimate: {}\n", p.estimate_basis);
    out += &format!("  output: {}\n", p.output);
    out += &format!("  plan digest: {}\n", p.plan_digest);
    let run = p.run_id.as_deref().unwrap_or(&p.target);
    out += &format!(
        "next: flameox reduction execute {run} --plan-digest {} --idempotency-key <your key>\n",
        p.plan_digest
    );
    out
}

fn share(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |s| format!("{s:.1} %"))
}

fn frames(out: &mut String, heading: &str, total: usize, rows: &[FrameShare]) {
    if rows.is_empty() {
        return;
    }
    *out += &format!("{heading} ({total} beyond the tolerance):\n");
    *out += "      base    target     delta  ratio  frame\n";
    for r in rows {
        *out += &format!(
            "  {:>8}  {:>8}  {:>+8.1}  {:>5}  {}{}\n",
            share(r.base_share_pct),
            share(r.target_share_pct),
            r.delta_pp,
            r.share_ratio.map_or("-".to_owned(), |x| format!("{x:.2}")),
            r.function,
            r.file
                .as_deref()
                .map(|f| format!(" ({f})"))
                .unwrap_or_default()
        );
    }
}

pub(crate) fn pipeline_comparison(c: &PipelineComparison) -> String {
    let side = |s: &flameox_engine::services::pipelines::comparison::SideSummary| {
        format!(
            "{} rev {} over {} at commit {} ({} artifacts, {}; {}): {} {}, {} frames",
            s.pipeline,
            s.revision,
            s.run_id.as_deref().unwrap_or(&s.target),
            &s.commit_id[..s.commit_id.len().min(12)],
            s.artifacts,
            s.producers.join(", "),
            s.extractors.join(", "),
            s.metric,
            s.unit,
            s.frames
        )
    };
    let mut out = format!("target {}\nbase   {}\n", side(&c.target), side(&c.base));
    for e in &c.evidence_changes {
        out += &format!(
            "evidence: {} rows {} → {}\n",
            e.table, e.base_rows, e.target_rows
        );
    }
    out += &format!(
        "shares: % of each side's total self value; {} frames on both sides, {} of the top {} shared\n\n",
        c.matched_frames, c.top_frames.shared, c.top_frames.top
    );
    frames(
        &mut out,
        &format!("differ by more than {} pp", c.tolerance_pp),
        c.differing_total,
        &c.differing,
    );
    frames(
        &mut out,
        "only in base",
        c.only_in_base_total,
        &c.only_in_base,
    );
    frames(
        &mut out,
        "only in target",
        c.only_in_target_total,
        &c.only_in_target,
    );
    out
}
