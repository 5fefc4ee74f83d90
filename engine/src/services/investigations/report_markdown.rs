//! The evidence report as Markdown that reads well in a pull-request
//! description: a heading per investigation, a table of hypotheses, then
//! each finding with its numbers, what its references hold and a shell
//! block of the commands that reproduce them. Text from records is
//! escaped so that a claim cannot break a table or open a code block.

use std::fmt::Write;

use super::report::{EvidenceReport, ReportedFinding, ReportedInvestigation};

/// Text of a table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// Text of a paragraph or heading: one line, backticks kept out of code spans.
fn line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// A number as a person reads it: integers without a fraction, others to
/// four significant digits.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        let digits = (3 - value.abs().log10().floor() as i32).clamp(0, 12) as usize;
        format!("{value:.digits$}")
    }
}

/// The whole report.
pub fn render(report: &EvidenceReport) -> String {
    let mut out = String::new();
    for investigation in &report.investigations {
        render_investigation(&mut out, investigation, report);
    }
    let loose: Vec<&ReportedFinding> = report
        .findings
        .iter()
        .filter(|f| {
            !report
                .investigations
                .iter()
                .any(|i| i.investigation_id == f.investigation_id)
        })
        .collect();
    if !loose.is_empty() {
        let _ = writeln!(out, "## Findings\n");
        for (i, f) in loose.into_iter().enumerate() {
            render_finding(&mut out, i + 1, f);
        }
    }
    if report.findings_total > report.findings.len() {
        let _ = writeln!(
            out,
            "_{} of {} findings shown._\n",
            report.findings.len(),
            report.findings_total
        );
    }
    let _ = writeln!(
        out,
        "<sub>flameox evidence report, {}{}.</sub>",
        report.generated_at,
        report
            .head_commit
            .as_deref()
            .map(|c| format!(", evidence at commit `{}`", &c[..c.len().min(12)]))
            .unwrap_or_default()
    );
    out
}

fn render_investigation(
    out: &mut String,
    investigation: &ReportedInvestigation,
    report: &EvidenceReport,
) {
    let _ = writeln!(out, "## {}\n", line(&investigation.question));
    let mut facts = vec![format!("`{}`", investigation.investigation_id)];
    if !investigation.targets.is_empty() {
        let targets: Vec<String> = investigation
            .targets
            .iter()
            .map(|t| format!("`{t}`"))
            .collect();
        facts.push(format!("about {}", targets.join(", ")));
    }
    if !investigation.tags.is_empty() {
        facts.push(format!("tags: {}", line(&investigation.tags.join(", "))));
    }
    let _ = writeln!(out, "{}\n", facts.join(" · "));
    if investigation.hypotheses.is_empty() {
        let _ = writeln!(out, "No hypotheses recorded.\n");
    } else {
        let _ = writeln!(out, "### Hypotheses\n");
        let _ = writeln!(
            out,
            "| status | hypothesis | prediction | refuted if | evidence |\n| --- | --- | --- | --- | --- |"
        );
        for h in &investigation.hypotheses {
            let mut evidence: Vec<String> = h.evidence.iter().map(|e| format!("`{e}`")).collect();
            if let Some(note) = &h.note {
                evidence.push(note.clone());
            }
            let _ = writeln!(
                out,
                "| **{}** | {} | {} | {} | {} |",
                h.status,
                cell(&h.statement),
                cell(&h.prediction),
                cell(&h.refuted_if),
                cell(&evidence.join("; "))
            );
        }
        if investigation.hypotheses_total > investigation.hypotheses.len() {
            let _ = writeln!(
                out,
                "\n_{} of {} hypotheses shown, newest first._",
                investigation.hypotheses.len(),
                investigation.hypotheses_total
            );
        }
        out.push('\n');
    }
    let own: Vec<&ReportedFinding> = report
        .findings
        .iter()
        .filter(|f| f.investigation_id == investigation.investigation_id)
        .collect();
    if own.is_empty() {
        let _ = writeln!(out, "No findings recorded.\n");
        return;
    }
    let _ = writeln!(out, "### Findings\n");
    for (i, f) in own.into_iter().enumerate() {
        render_finding(out, i + 1, f);
    }
}

fn render_finding(out: &mut String, position: usize, f: &ReportedFinding) {
    let _ = writeln!(
        out,
        "**{position}. {}**{}  \n_{}_ · `{}` revision {}\n",
        line(&f.claim),
        if f.retracted { " (retracted)" } else { "" },
        f.level.replace('_', " "),
        f.finding_id,
        f.revision
    );
    if !f.numbers.is_empty() {
        let _ = writeln!(out, "| number | value |\n| --- | --- |");
        for (name, value) in &f.numbers {
            let _ = writeln!(out, "| {} | {} |", cell(name), number(*value));
        }
        out.push('\n');
    }
    for r in &f.references {
        let _ = writeln!(out, "- `{}`: {}", r.reference, line(&r.holds));
    }
    let commands: Vec<&str> = f
        .references
        .iter()
        .filter_map(|r| r.reproduce.as_ref().map(|p| p.command.as_str()))
        .collect();
    if !commands.is_empty() {
        let _ = writeln!(out, "\nReproduce:\n\n```sh");
        for command in commands {
            let _ = writeln!(out, "{}", command.replace("```", "` ` `"));
        }
        let _ = writeln!(out, "```");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_stay_one_line_and_numbers_read_plainly() {
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(0.123456), "0.1235");
        assert_eq!(number(1234.5678), "1235");
        assert_eq!(number(-0.0521), "-0.05210");
    }
}
