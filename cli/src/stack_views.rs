//! How a person reads a frame's stacks, a trace window and a page of
//! measurements: the terminal's views of those operations' typed results.

use flameox_engine::services::analyze::{StackExamplesResult, WindowResult};
use flameox_engine::services::measurements::MeasurementsResult;

use crate::render::{self, Table, cut, duration_ns, thousands};

pub(crate) fn stack_examples(r: &StackExamplesResult) -> String {
    let mut out = format!("stacks through {}\n", r.frame.function);
    if let Some(threads) = &r.threads {
        out += &format!("threads: {}\n", cut(&threads.join(", "), 200));
    }
    for (i, s) in r.stacks.iter().enumerate() {
        out += &format!(
            "#{} weight {} ({} occurrences)\n",
            i + 1,
            render::value(s.weight, if r.metric.ends_with("_ns") { "ns" } else { "" }),
            thousands(s.count)
        );
        for (depth, f) in s.frames.iter().enumerate() {
            out += &format!("  {}{}\n", "  ".repeat(depth.min(30)), cut(f, 100));
        }
    }
    out + &render::footer(r.returned, r.total, None) + "\n"
}

pub(crate) fn trace_window(r: &WindowResult) -> String {
    // A person reads times from the trace's start (or the first event, as
    // a relative window asks); `--json` keeps the trace's own timestamps.
    let origin = r
        .relative_to_ns
        .or(r.trace_span_ns.map(|(first, _)| first))
        .unwrap_or(0);
    let since = if r.relative_to_ns.is_some() {
        "since first event"
    } else {
        "since trace start"
    };
    let mut t = Table::new(
        &[since, "dur", "depth", "kind", "track", "name"],
        &[0, 1, 2],
    )
    .shorten(&[5]);
    for e in &r.events {
        t.row(vec![
            duration_ns(e.ts_ns.saturating_sub(origin)),
            match e.dur_ns {
                Some(d) if d < 0 => "open".into(),
                Some(d) => duration_ns(d),
                None => "-".into(),
            },
            e.depth.map_or("-".into(), |d| d.to_string()),
            e.kind.clone().unwrap_or_else(|| "-".into()),
            e.track_id.map_or("-".into(), |t| t.to_string()),
            one_line(&e.name),
        ]);
    }
    let head = format!(
        "{} of {} events from {} to {} {since} (trace time {} ns = 0)\n",
        thousands(r.returned as i64),
        thousands(r.total as i64),
        duration_ns(r.start_ns.saturating_sub(origin).max(0)),
        duration_ns(r.end_ns.saturating_sub(origin).max(0)),
        thousands(origin),
    );
    head + &t.render()
        + &render::footer(r.returned, r.total, None)
        + &render::evidence_line(&r.evidence.status, &r.evidence.reason)
}

/// Text on one line: a table cell never breaks the table.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A measured value in its unit: durations humanized from 1 µs up.
fn measured(value: f64, unit: &str) -> String {
    match unit {
        "ns" if value.abs() >= 1e3 => render::duration_ns(value.round() as i64),
        "ns" => format!("{value:.3} ns"),
        "bytes" if value >= 0.0 => render::bytes(value.round() as u64),
        _ => format!("{value} {unit}"),
    }
}

pub(crate) fn measurements(r: &MeasurementsResult) -> String {
    let mut t = Table::new(
        &["name", "#", "value", "warmup", "variant", "parameters"],
        &[1, 2],
    );
    for row in &r.rows {
        t.row(vec![
            cut(&row.name, 60),
            row.sample_index.to_string(),
            measured(row.value, &row.unit),
            if row.is_warmup { "yes" } else { "" }.to_owned(),
            row.variant.clone().unwrap_or_default(),
            row.parameters
                .as_ref()
                .map(|p| cut(&p.to_string(), 40))
                .unwrap_or_default(),
        ]);
    }
    t.render()
        + &render::footer(r.returned, r.total, None)
        + &render::evidence_line(&r.evidence.status, &r.evidence.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_values_read_in_their_unit() {
        assert_eq!(measured(18.25, "ns"), "18.250 ns");
        assert_eq!(measured(2_500_000.0, "ns"), "2.50 ms");
        assert_eq!(measured(3.0, "exit_code"), "3 exit_code");
    }
}
