//! How a person reads the profile and accelerator analyses: the terminal's
//! views of the typed results the catalogued operations return (several
//! tables, locations, deltas with signs), beside their JSON.

use flameox_engine::services::analyze::HotspotsResult;
use flameox_engine::services::gpu::{AcceleratorResult, GpuSummaryResult};
use flameox_engine::services::pytorch::PytorchResult;
use flameox_engine::services::views::FrameDeltaResult;

use crate::frame_cells::{FrameColumns, FrameRow};
use crate::render::{self, Table, cut, thousands};

pub(crate) fn gpu_summary(r: &GpuSummaryResult) -> String {
    let unit = r.unit.as_str();
    let mut out = format!(
        "{} of {} (total {})\n",
        r.report.name(),
        r.scope.requested,
        render::value(r.grand_total, unit)
    );
    let mut t = Table::new(
        &[
            "total", "%", "count", "avg", "median", "min", "max", "stddev", "name",
        ],
        &[0, 1, 2, 3, 4, 5, 6, 7],
    );
    for row in &r.rows {
        t.row(vec![
            render::value(row.total, unit),
            format!("{:.2}", row.percent),
            thousands(row.count),
            render::value(row.avg.round() as i64, unit),
            render::value(row.median.round() as i64, unit),
            render::value(row.min, unit),
            render::value(row.max, unit),
            render::value(row.stddev.round() as i64, unit),
            if row.variants > 1 {
                format!("{} ({} variants)", cut(&row.name, 60), row.variants)
            } else {
                cut(&row.name, 70)
            },
        ]);
    }
    out += &t.render();
    out += &render::footer(r.returned, r.total, None);
    if !r.by_family && r.families * 2 <= r.total {
        out += &format!(
            "\n{} names in {} kernel families: --family groups them",
            thousands(r.total as i64),
            thousands(r.families as i64)
        );
    }
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}

pub(crate) fn hotspots(r: &HotspotsResult) -> String {
    let target = match &r.scope.run_id {
        Some(run) => format!("run {}", &run[..run.len().min(8)]),
        None => r.scope.requested.clone(),
    };
    let total = render::value(r.total_self, &r.unit);
    let words = flameox_engine::units::metric_words(&r.metric);
    let mut out = format!(
        "hotspots of {target} by self {words} (commit {})\n% of {total}: the self {words} of every thread, summed\n",
        &r.commit_id[..r.commit_id.len().min(12)],
    );
    if let Some(p) = &r.phase {
        out += &render::phase_line(p);
    }
    let frames: Vec<FrameRow> = r.rows.iter().map(FrameRow::of).collect();
    let shape = FrameColumns::of(&frames);
    let mut t = shape.table(&["self", "self %", "incl", "incl %", "count"], &[2]);
    for (row, frame) in r.rows.iter().zip(&frames) {
        let mut cells = vec![
            render::value(row.self_value, &r.unit),
            format!("{:.2}", row.self_pct),
            render::value(row.inclusive_value, &r.unit),
            format!("{:.2}", row.inclusive_pct),
            thousands(row.count),
        ];
        shape.push(&mut cells, frame);
        t.row(cells);
    }
    out += &t.render();
    out += &render::footer(r.returned, r.total, None);
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}

pub(crate) fn deltas(result: &FrameDeltaResult) -> String {
    let r = &result.answer;
    let unit = r.unit.as_str();
    let mut out = format!(
        "{} against {} by {} (whole: total self {} → {}), frames matched by {}\n",
        result.scope.requested,
        result.base_scope.requested,
        r.metric,
        render::value(r.whole.base_total_self, unit),
        render::value(r.whole.target_total_self, unit),
        r.matched_by.replace('_', " "),
    );
    if let Some(w) = &r.warning {
        out += &format!("warning: {w}\n");
    }
    let frames: Vec<FrameRow> = r.rows.iter().map(FrameRow::of).collect();
    let shape = FrameColumns::of(&frames);
    let mut t = shape.table(&["base self", "self", "Δ self", "Δ incl"], &[3]);
    for (row, frame) in r.rows.iter().zip(&frames) {
        let signed = |v: i64| {
            let text = render::value(v.abs(), unit);
            if v > 0 {
                format!("+{text}")
            } else if v < 0 {
                format!("-{text}")
            } else {
                text
            }
        };
        let mut cells = vec![
            render::value(row.base_self, unit),
            render::value(row.target_self, unit),
            signed(row.delta_self),
            signed(row.delta_inclusive),
        ];
        shape.push(&mut cells, frame);
        t.row(cells);
    }
    out += &t.render();
    out += &render::footer(result.returned, r.total_frames, None);
    out
}

pub(crate) fn accelerator(r: &AcceleratorResult) -> String {
    let a = &r.answer;
    let mut out = format!("accelerator launches of {}\n", r.scope.requested);
    let mut t = Table::new(
        &[
            "region",
            "launches",
            "graph",
            "kernels",
            "kernel time",
            "coverage",
            "p50",
            "p90",
            "p99",
            "max",
        ],
        &[1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    let many = a.regions.len() > 1 || r.truncated;
    let shown = many.then_some(&a.overall).into_iter().chain(&a.regions);
    for g in shown {
        let l = g.launch_latency.as_ref();
        let ns = |v: Option<i64>| v.map_or("-".to_owned(), |v| render::value(v, "ns"));
        t.row(vec![
            cut(&g.region, 30),
            thousands(g.direct_launches.count),
            thousands(g.graph_launches.count),
            thousands(g.kernels.count),
            render::value(g.kernels.time_ns, "ns"),
            format!("{:.1}%", g.correlation_coverage * 100.0),
            ns(l.map(|l| l.p50_ns)),
            ns(l.map(|l| l.p90_ns)),
            ns(l.map(|l| l.p99_ns)),
            ns(l.map(|l| l.max_ns)),
        ]);
    }
    out += &t.render();
    if many {
        out += &render::footer(r.returned, r.total, None);
    }
    let mut s = Table::new(
        &[
            "device",
            "stream",
            "kernels",
            "busy",
            "util",
            "gaps",
            "gap total",
            "gap max",
        ],
        &[0, 1, 2, 3, 4, 5, 6, 7],
    );
    for st in &a.streams {
        let id = |v: Option<i64>| v.map_or("-".to_owned(), |v| v.to_string());
        s.row(vec![
            id(st.device),
            id(st.stream),
            thousands(st.kernels),
            render::value(st.busy_ns, "ns"),
            format!("{:.1}%", st.utilization * 100.0),
            thousands(st.gaps),
            render::value(st.gap_total_ns, "ns"),
            render::value(st.gap_max_ns, "ns"),
        ]);
    }
    out += "\nper stream\n";
    out += &s.render();
    if let Some(c) = &r.comparison {
        out += &format!("\nagainst {} (target − base)\n", c.base_scope.requested);
        let mut d = Table::new(
            &[
                "region",
                "Δ launches",
                "Δ graph",
                "Δ kernels",
                "Δ kernel time",
                "Δ p50",
            ],
            &[1, 2, 3, 4, 5],
        );
        for g in &c.regions {
            d.row(vec![
                cut(&g.region, 30),
                g.direct_launches.to_string(),
                g.graph_launches.to_string(),
                g.kernels.to_string(),
                g.kernel_time_ns.to_string(),
                g.latency_p50_ns.map_or("-".to_owned(), |v| v.to_string()),
            ]);
        }
        out += &d.render();
    }
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}

pub(crate) fn pytorch(r: &PytorchResult) -> String {
    let a = &r.answer;
    let mut out = format!(
        "pytorch view of {}: sync {} in {} calls, compilation {}",
        r.scope.requested,
        render::value(a.sync_ns, "ns"),
        thousands(a.sync_calls),
        render::value(a.compile_ns, "ns"),
    );
    if let Some(w) = a.warmup_ratio {
        out += &format!(", first of {} steps took {w:.2}× the median", a.steps.len());
    }
    out += "\n";
    let mut t = Table::new(
        &["self", "total", "count", "device", "launches", "operator"],
        &[0, 1, 2, 3, 4],
    );
    for row in &a.rows {
        t.row(vec![
            render::value(row.self_ns, "ns"),
            render::value(row.total_ns, "ns"),
            thousands(row.count),
            render::value(row.device_ns, "ns"),
            thousands(row.device_ops),
            cut(&row.name, 60),
        ]);
    }
    out += &t.render();
    out += &render::footer(r.returned, r.total, None);
    let shaped: Vec<_> = a
        .rows
        .iter()
        .filter(|r| !r.shapes.is_empty())
        .take(5)
        .collect();
    if !shaped.is_empty() {
        out += "\ninput shapes of the heaviest operators (by time):\n";
        for row in shaped {
            out += &format!("  {}\n", cut(&row.name, 60));
            for s in &row.shapes {
                out += &format!(
                    "    {} × {} {}\n",
                    thousands(s.count),
                    render::value(s.total_ns, "ns"),
                    cut(&s.shapes, 100)
                );
            }
        }
    }
    if !a.repeated_small.is_empty() {
        out += "\nrepeated small operators (≥ 100 calls, ≤ 10 µs average):\n";
        for row in &a.repeated_small {
            out += &format!("  {} × {}\n", thousands(row.count), cut(&row.name, 60));
        }
    }
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}
