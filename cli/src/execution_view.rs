//! The terminal's view of `analyze execution`: a section per report the
//! run holds (tests, coverage, imports, configuration, SDK spans and
//! metrics), then the changes against the base
//! run, then what is missing and how to add it.

use flameox_engine::services::query::execution::{ExecutionResult, TimeDelta};
use flameox_engine::services::query::sdk_observations::SdkObservationsSection;

use flameox_engine::units::duration_ns;

fn deltas(out: &mut String, heading: &str, rows: &[TimeDelta]) {
    if rows.is_empty() {
        return;
    }
    *out += &format!("  {heading}:\n");
    for d in rows {
        *out += &format!(
            "    +{:>10}  {}  ({} → {})\n",
            duration_ns(d.delta_ns),
            d.name,
            duration_ns(d.base_ns),
            duration_ns(d.target_ns)
        );
    }
}

fn sdk(out: &mut String, o: &SdkObservationsSection) {
    *out += &format!(
        "\nSDK spans: {} spans of {} names; by total time (self = not inside a child on its lane):\n",
        o.spans, o.span_names
    );
    for s in &o.slowest_spans {
        *out += &format!(
            "    {:>10} total {:>10} self {:>6} ×  {}{}\n",
            duration_ns(s.total_ns),
            duration_ns(s.self_ns),
            s.count,
            s.name,
            s.kind
                .as_deref()
                .map_or(String::new(), |k| format!(" ({k})"))
        );
    }
    if o.metric_series > 0 {
        *out += &format!("SDK metrics: {} series\n", o.metric_series);
        for m in &o.metrics {
            *out += &format!(
                "    {}: last {} {} (min {}, max {}, {} points)\n",
                m.series,
                m.last,
                m.unit.as_deref().unwrap_or(""),
                m.min,
                m.max,
                m.points
            );
        }
    }
}

pub(crate) fn render(r: &ExecutionResult) -> String {
    let mut out = format!("run {}\n", r.run_id);
    if let Some(t) = &r.tests {
        let outcomes: Vec<String> = t
            .by_outcome
            .iter()
            .map(|(o, n)| format!("{n} {o}"))
            .collect();
        out += &format!(
            "\ntests: {}{} ({})\n",
            t.tests,
            if t.complete {
                ""
            } else {
                " (the slowest 1000 counted)"
            },
            outcomes.join(", ")
        );
        out += "  slowest:\n";
        for test in &t.slowest {
            out += &format!(
                "    {:>10}  {:<8} {}\n",
                duration_ns(test.duration_ns),
                test.outcome,
                test.name
            );
        }
        if !t.failing.is_empty() {
            out += "  failing:\n";
            for test in &t.failing {
                out += &format!("    {:<8} {}\n", test.outcome, test.name);
            }
        }
    }
    if let Some(c) = &r.coverage {
        out += &format!(
            "\ncoverage: {} over {} files\n  least covered:\n",
            c.percent_covered
                .map_or("(no total)".to_owned(), |p| format!("{p:.1} %")),
            c.files
        );
        for f in &c.least_covered {
            out += &format!("    {:>6.1} %  {}\n", f.percent_covered, f.path);
        }
    }
    if let Some(i) = &r.imports {
        out += &format!(
            "\nimports: {} in all\n  slowest by own time:\n",
            duration_ns(i.total_ns)
        );
        for m in &i.slowest {
            out += &format!(
                "    {:>10} own {:>10} with its imports  {}\n",
                duration_ns(m.self_ns),
                duration_ns(m.inclusive_ns),
                m.module
            );
        }
    }
    if let Some(x) = &r.resources {
        let ns = |v: Option<f64>| v.map_or("-".to_owned(), |v| duration_ns(v as i64));
        out += &format!(
            "\nresources: wall {}, CPU {}, peak RSS {}\n",
            ns(x.wall_time_ns),
            ns(x.cpu_time_ns),
            x.peak_rss_bytes
                .map_or("-".to_owned(), |b| crate::render::bytes(b as u64))
        );
    }
    if let Some(c) = &r.configuration {
        let h = &c.host;
        out += &format!(
            "\nconfiguration: {} CPUs ({}), governor {}, {} {}\n",
            h.logical_cpus,
            h.cpu_model.as_deref().unwrap_or("model unknown"),
            h.frequency_governor.as_deref().unwrap_or("unknown"),
            h.os,
            h.kernel.as_deref().unwrap_or("")
        );
        if let Some(i) = &c.interpreter {
            out += &format!("  {i}, {} packages\n", c.packages.unwrap_or(0));
        }
        if let Some(g) = &c.git {
            out += &format!(
                "  commit {}{}\n",
                g.commit,
                if g.dirty { " (dirty)" } else { "" }
            );
        }
    }
    if let Some(o) = &r.sdk_observations {
        sdk(&mut out, o);
    }
    if let Some(d) = &r.compare {
        out += &format!("\nagainst {}:\n", d.base_run);
        for x in &d.resources {
            let show = |v: f64| match x.unit.as_str() {
                "ns" => duration_ns(v as i64),
                "bytes" => crate::render::bytes(v as u64),
                _ => format!("{v}"),
            };
            out += &format!(
                "  {}: {} → {}{}\n",
                x.name.replace('_', " "),
                show(x.base),
                show(x.target),
                x.ratio.map_or(String::new(), |r| format!(" (×{r:.2})"))
            );
        }
        if d.configuration_changes_total > 0 {
            out += &format!(
                "  configuration changes ({} in all):\n",
                d.configuration_changes_total
            );
            for c in &d.configuration_changes {
                let v = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
                out += &format!("    {}: {} → {}\n", c.field, v(&c.base), v(&c.target));
            }
        }
        if !d.newly_failing.is_empty() {
            out += &format!("  newly failing: {}\n", d.newly_failing.join(", "));
        }
        if !d.fixed.is_empty() {
            out += &format!("  fixed: {}\n", d.fixed.join(", "));
        }
        deltas(&mut out, "slower tests", &d.slower_tests);
        if !d.coverage_changes.is_empty() {
            out += "  coverage changes:\n";
            for c in &d.coverage_changes {
                let pct = |v: Option<f64>| v.map_or("-".to_owned(), |p| format!("{p:.1} %"));
                out += &format!("    {} → {}  {}\n", pct(c.base), pct(c.target), c.path);
            }
        }
        deltas(&mut out, "slower imports", &d.slower_imports);
        if !d.span_changes.is_empty() {
            out += "  span totals that moved most:\n";
            for c in &d.span_changes {
                out += &format!(
                    "    {:>+11}  {}  ({} × {} → {} × {})\n",
                    duration_ns(c.delta_total_ns),
                    c.name,
                    c.base_count,
                    duration_ns(c.base_total_ns),
                    c.target_count,
                    duration_ns(c.target_total_ns)
                );
            }
        }
        if !d.metric_changes.is_empty() {
            out += "  metrics whose last value changed:\n";
            for m in &d.metric_changes {
                let v = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v}"));
                out += &format!(
                    "    {}: {} → {}\n",
                    m.series,
                    v(m.base_last),
                    v(m.target_last)
                );
            }
        }
    }
    for m in &r.missing {
        out += &format!("\nno {m}");
    }
    if !r.missing.is_empty() {
        out += "\n";
    }
    out
}
