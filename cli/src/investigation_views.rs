//! How a person reads investigation memory: an investigation with its
//! question and targets, its hypotheses as blocks (statement, what it
//! predicts, what would refute it, evidence), one hypothesis with the
//! history of its status.

use flameox_engine::services::investigations::finding::Finding;
use flameox_engine::services::investigations::hypothesis::Hypothesis;
use flameox_engine::services::investigations::investigation::{Investigation, InvestigationDetail};

fn header(inv: &Investigation) -> String {
    let mut out = format!(
        "investigation {} (revision {}, {})\nquestion: {}\n",
        inv.investigation_id, inv.revision, inv.created_at, inv.question
    );
    if !inv.targets.is_empty() {
        out += &format!("targets: {}\n", inv.targets.join(", "));
    }
    if !inv.tags.is_empty() {
        out += &format!("tags: {}\n", inv.tags.join(", "));
    }
    out
}

fn block(h: &Hypothesis) -> String {
    let mut out = format!(
        "{} [{}] revision {}\n  {}\n  predicts: {}\n  refuted if: {}\n",
        h.hypothesis_id,
        h.status.name(),
        h.revision,
        h.statement,
        h.prediction,
        h.refuted_if
    );
    if !h.evidence.is_empty() {
        out += &format!("  evidence: {}\n", h.evidence.join(", "));
    }
    out
}

pub(crate) fn investigation(inv: &Investigation) -> String {
    header(inv)
}

/// The heading of a list that may show only the newest of its records.
fn section(noun: &str, shown: usize, total: usize) -> String {
    if shown < total {
        format!("\n{total} {noun}, the newest {shown} shown\n")
    } else {
        format!("\n{total} {noun}\n")
    }
}

pub(crate) fn detail(d: &InvestigationDetail) -> String {
    let mut out = header(&d.investigation);
    out += &section("hypothesis(es)", d.hypotheses.len(), d.hypotheses_total);
    for h in &d.hypotheses {
        out += "\n";
        out += &block(h);
    }
    out += &section("finding(s)", d.findings.len(), d.findings_total);
    for f in &d.findings {
        out += "\n";
        out += &finding(f);
    }
    if !d.records.is_empty() {
        out += &format!("\nrecords named: {}\n", d.records.join(", "));
    }
    out
}

pub(crate) fn finding(f: &Finding) -> String {
    let mut out = format!(
        "{} [{}{}] revision {}\n  {}\n",
        f.finding_id,
        f.level.name(),
        if f.retracted { ", retracted" } else { "" },
        f.revision,
        f.claim
    );
    for (name, value) in &f.numbers {
        out += &format!("  {name} = {value}\n");
    }
    if !f.references.is_empty() {
        out += &format!("  references: {}\n", f.references.join(", "));
    }
    out
}

pub(crate) fn hypothesis(h: &Hypothesis) -> String {
    let mut out = block(h);
    out += &format!("  investigation: {}\n  history:\n", h.investigation_id);
    for change in &h.history {
        out += &format!(
            "    revision {} {} {}{}{}\n",
            change.revision,
            change.status.name(),
            change.at,
            change
                .note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default(),
            if change.evidence.is_empty() {
                String::new()
            } else {
                format!(" ({})", change.evidence.join(", "))
            }
        );
    }
    out
}

/// The evidence report: its Markdown, or (format json) the content itself.
pub(crate) fn report(result: &serde_json::Value) -> String {
    match result["markdown"].as_str() {
        Some(markdown) => markdown.to_owned(),
        None => serde_json::to_string_pretty(result).unwrap_or_default() + "\n",
    }
}
