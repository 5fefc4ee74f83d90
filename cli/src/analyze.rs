//! `flameox analyze …`: argument parsing and rendering only; the answers
//! come from the engine's analyze and views services.

use std::path::Path;

use flameox_engine::FlameoxError;
use flameox_engine::error::Result;
use flameox_engine::services::QueryContext;
use flameox_engine::services::analyze::{self, HotspotsRequest, HotspotsResult};
use flameox_engine::services::gpu::{
    self, AcceleratorRequest, AcceleratorResult, GpuSummaryRequest, GpuSummaryResult,
};
use flameox_engine::services::gpu_breakdown::{self, GpuBreakdownRequest};
use flameox_engine::services::gpu_gaps::{self, GpuGapsRequest};
use flameox_engine::services::memory::{self, MemoryRequest};
use flameox_engine::services::pytorch::{self, PytorchRequest, PytorchResult};
use flameox_engine::services::views::{
    self, FlameGraphRequest, FrameDeltaRequest, FrameDeltaResult,
};

use crate::commands::{block_on, call_options, emit, open};
use crate::render::{self, Table, cut, thousands};
use crate::{AnalyzeCommand, GlobalOptions};

pub(crate) fn parse_window(text: &str) -> Result<(i64, i64)> {
    let bad =
        || FlameoxError::invalid_argument("window", "expected START:END in integer nanoseconds");
    let (a, b) = text.split_once(':').ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

pub(crate) fn analyze_command(g: &GlobalOptions, analysis: AnalyzeCommand) -> Result<()> {
    let ws = open(g)?;
    let qc = QueryContext {
        ws: &ws,
        cache: None,
        options: call_options(g)?,
    };
    match analysis {
        AnalyzeCommand::Hotspots {
            target,
            page,
            metric,
            thread,
            process,
            window,
            folded,
            flamegraph,
            diff_against,
        } => {
            let window = window.as_deref().map(parse_window).transpose()?;
            if diff_against.is_some() && (thread.is_some() || process.is_some() || window.is_some())
            {
                return Err(FlameoxError::invalid_argument(
                    "diff_against",
                    "a comparison covers whole scopes; drop --thread, --process and --window",
                ));
            }
            if let Some(base) = &diff_against {
                let request = FrameDeltaRequest {
                    target: target.clone(),
                    base: base.clone(),
                    metric: metric.clone(),
                    limit: page.limit,
                };
                let result = block_on(views::frame_deltas(&qc, &request))??;
                write_flamegraph(&qc, &target, Some(&result.metric), Some(base), &flamegraph)?;
                return emit(g, &result, render_deltas);
            }
            let request = HotspotsRequest {
                target: target.clone(),
                metric,
                thread,
                process,
                window,
                limit: page.limit,
                cursor: page.cursor,
            };
            let (result, lines) = block_on(async {
                let result = analyze::analyze_hotspots(&qc, &request).await?;
                let lines = match &folded {
                    Some(_) => Some(
                        analyze::folded_stacks(&qc, &target, Some(result.metric.as_str())).await?,
                    ),
                    None => None,
                };
                Ok::<_, FlameoxError>((result, lines))
            })??;
            if let (Some(path), Some(lines)) = (&folded, lines) {
                let text: String = lines
                    .iter()
                    .map(|(stack, w)| format!("{stack} {w}\n"))
                    .collect();
                std::fs::write(path, text)
                    .map_err(|e| FlameoxError::internal(format!("writing the folded file: {e}")))?;
            }
            write_flamegraph(&qc, &target, Some(&result.metric), None, &flamegraph)?;
            emit(g, &result, render_hotspots)
        }
        AnalyzeCommand::AcceleratorLaunches {
            target,
            phase,
            base,
            limit,
        } => {
            let request = AcceleratorRequest {
                target,
                phase,
                base,
                limit,
            };
            let result = block_on(gpu::accelerator_launches(&qc, &request))??;
            emit(g, &result, render_accelerator)
        }
        AnalyzeCommand::Pytorch { target, limit } => {
            let request = PytorchRequest { target, limit };
            let result = block_on(pytorch::pytorch(&qc, &request))??;
            emit(g, &result, render_pytorch)
        }
        AnalyzeCommand::GpuSummary {
            target,
            report,
            limit,
        } => {
            let request = GpuSummaryRequest {
                target,
                report: Some(report),
                limit,
            };
            let result = block_on(gpu::gpu_summary(&qc, &request))??;
            emit(g, &result, render_gpu_summary)
        }
        AnalyzeCommand::GpuGaps {
            target,
            min_gap_us,
            chunks,
            below,
            limit,
        } => {
            let request = GpuGapsRequest {
                target,
                min_gap_us: Some(min_gap_us),
                chunks: Some(chunks),
                below: Some(below),
                limit,
            };
            let result = block_on(gpu_gaps::gpu_gaps(&qc, &request))??;
            emit(g, &result, crate::gaps_memory_view::render_gpu_gaps)
        }
        AnalyzeCommand::Compare(args) => crate::run_sets::compare_command(g, &qc, args, false),
        AnalyzeCommand::RecordComparison(args) => {
            crate::run_sets::compare_command(g, &qc, args, true)
        }
        AnalyzeCommand::Scaling(args) => crate::run_sets::scaling_command(g, &qc, args, false),
        AnalyzeCommand::Record(args) => crate::run_sets::scaling_command(g, &qc, args, true),
        AnalyzeCommand::Memory { target, limit } => {
            let request = MemoryRequest { target, limit };
            let result = block_on(memory::memory(&qc, &request))??;
            emit(g, &result, crate::gaps_memory_view::render_memory)
        }
        AnalyzeCommand::GpuBreakdown {
            targets,
            section,
            limit,
            kernel_wait_us,
            runtime_outlier_us,
            launch_delay_outlier_us,
        } => {
            let request = GpuBreakdownRequest {
                targets,
                section,
                limit,
                kernel_wait_ns: us_to_ns("kernel_wait_us", kernel_wait_us)?,
                runtime_outlier_ns: us_to_ns("runtime_outlier_us", runtime_outlier_us)?,
                launch_delay_outlier_ns: us_to_ns(
                    "launch_delay_outlier_us",
                    launch_delay_outlier_us,
                )?,
            };
            let result = block_on(gpu_breakdown::gpu_breakdown(&qc, &request))??;
            emit(g, &result, crate::gpu_breakdown::render)
        }
    }
}

/// A threshold flag in µs as the service's ns (range checked there).
fn us_to_ns(field: &str, us: Option<f64>) -> Result<Option<i64>> {
    match us {
        None => Ok(None),
        Some(v) if v.is_finite() && v >= 0.0 && v * 1000.0 < i64::MAX as f64 => {
            Ok(Some((v * 1000.0).round() as i64))
        }
        Some(_) => Err(FlameoxError::invalid_argument(
            field,
            "must be a non-negative number of microseconds",
        )),
    }
}

fn render_gpu_summary(r: &GpuSummaryResult) -> String {
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
            cut(&row.name, 70),
        ]);
    }
    out += &t.render();
    out += &render::footer(r.returned, r.total, None);
    out += &format!(
        "\nevidence: {} ({})\n",
        r.evidence.status, r.evidence.reason
    );
    out
}

/// Renders the flame graph (differential with `base`) into `path`.
fn write_flamegraph(
    qc: &QueryContext<'_>,
    target: &str,
    metric: Option<&str>,
    base: Option<&String>,
    path: &Option<std::path::PathBuf>,
) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    let request = FlameGraphRequest {
        target: target.to_owned(),
        metric: metric.map(str::to_owned),
        diff_against: base.cloned(),
    };
    let graph = block_on(views::flame_graph(qc, &request))??;
    write_file(path, graph.svg.as_bytes())?;
    eprintln!(
        "flame graph{}: {} ({} stacks, {})",
        if graph.differential {
            " (differential)"
        } else {
            ""
        },
        path.display(),
        graph.stacks,
        graph.metric
    );
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| {
        FlameoxError::invalid_argument(
            "flamegraph",
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

fn render_hotspots(r: &HotspotsResult) -> String {
    let target = match &r.scope.run_id {
        Some(run) => format!("run {run}"),
        None => r.scope.requested.clone(),
    };
    let total = render::value(r.total_self, &r.unit);
    let mut out = format!(
        "hotspots of {target} by self {} (evidence commit {}); % of {total}, the self {} of every thread in scope summed\n",
        flameox_engine::units::metric_words(&r.metric),
        &r.commit_id[..r.commit_id.len().min(12)],
        flameox_engine::units::metric_words(&r.metric),
    );
    let mut t = Table::new(
        &[
            "self", "self %", "incl", "incl %", "count", "function", "location",
        ],
        &[0, 1, 2, 3, 4],
    );
    for row in &r.rows {
        t.row(vec![
            render::value(row.self_value, &r.unit),
            format!("{:.2}", row.self_pct),
            render::value(row.inclusive_value, &r.unit),
            format!("{:.2}", row.inclusive_pct),
            thousands(row.count),
            cut(&row.function, 60),
            cut(&location(&row.file, row.line, &row.module), 40),
        ]);
    }
    out += &t.render();
    let next = r.next_cursor.as_ref().map(|c| {
        format!(
            "flameox analyze hotspots {} --limit {} --cursor {c}",
            r.scope.requested, r.returned
        )
    });
    out += &render::footer(r.returned, r.total, next);
    out += &format!(
        "\nevidence: {} ({})\n",
        r.evidence.status, r.evidence.reason
    );
    out
}

fn location(file: &Option<String>, line: Option<i64>, module: &Option<String>) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        (Some(f), None) => f.clone(),
        _ => module.clone().unwrap_or_default(),
    }
}

fn render_deltas(r: &FrameDeltaResult) -> String {
    let unit = r.unit.as_str();
    let mut out = format!(
        "{} against {} by {} (total self {} → {})\n",
        r.scope.requested,
        r.base_scope.requested,
        r.metric,
        render::value(r.base_total_self, unit),
        render::value(r.target_total_self, unit),
    );
    let mut t = Table::new(
        &[
            "base self",
            "self",
            "Δ self",
            "Δ incl",
            "function",
            "location",
        ],
        &[0, 1, 2, 3],
    );
    for row in &r.rows {
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
        t.row(vec![
            render::value(row.base_self, unit),
            render::value(row.target_self, unit),
            signed(row.delta_self),
            signed(row.delta_inclusive),
            cut(&row.function, 60),
            cut(&location(&row.file, row.line, &row.module), 40),
        ]);
    }
    out += &t.render();
    out += &render::footer(r.returned, r.total, None);
    out
}

fn render_accelerator(r: &AcceleratorResult) -> String {
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
    out += &format!(
        "\nevidence: {} ({})\n",
        r.evidence.status, r.evidence.reason
    );
    out
}

fn render_pytorch(r: &PytorchResult) -> String {
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
    out += &format!(
        "\nevidence: {} ({})\n",
        r.evidence.status, r.evidence.reason
    );
    out
}
