//! Text rendering of `flameox analyze gpu-breakdown`: one table per section,
//! rows labelled by rank and artifact so several targets read side by side.
//! Presentation only; `--json` prints the service result itself.

use flameox_engine::recipes::gpu_breakdown::DeviceKey;
use flameox_engine::recipes::gpu_breakdown_ops::LaunchOutliers;
use flameox_engine::services::gpu_breakdown::GpuBreakdownResult;

use crate::render::{self, Table, cut, thousands};

/// Examples shown per outlier kind in text (all are in `--json`).
const TEXT_EXAMPLES: usize = 5;

pub(crate) fn ns(v: i64) -> String {
    render::value(v, "ns")
}

pub(crate) fn id(v: Option<i64>) -> String {
    v.map_or("-".to_owned(), |v| v.to_string())
}

pub(crate) fn short(artifact_id: &str) -> String {
    let hex = artifact_id.strip_prefix("sha256:").unwrap_or(artifact_id);
    hex.chars().take(12).collect()
}

fn label(rank: Option<i64>, artifact_id: &str) -> [String; 2] {
    [id(rank), short(artifact_id)]
}

fn key_cells(k: &DeviceKey) -> Vec<String> {
    let [rank, artifact] = label(k.rank, &k.artifact_id);
    vec![rank, artifact, id(k.device)]
}

fn pct(v: f64) -> String {
    format!("{v:.2}%")
}

pub(crate) fn render(r: &GpuBreakdownResult) -> String {
    let a = &r.answer;
    let t = &a.thresholds;
    let mut out = format!(
        "gpu breakdown of {} (kernel wait < {}, runtime outlier > {}, launch delay outlier > {})\n",
        r.targets
            .iter()
            .map(|t| t.requested.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        ns(t.kernel_wait_ns),
        ns(t.runtime_outlier_ns),
        ns(t.launch_delay_outlier_ns),
    );
    if let Some(d) = &r.ranks {
        out += &format!(
            "\n{} ranks ({} with device work); tables below: ranks {} ({})\nspread over all ranks\n",
            d.artifacts_total,
            d.with_device_work,
            d.shown.join(", "),
            d.chosen_by
        );
        let mut tb = Table::new(
            &["measure", "ranks", "min", "at", "median", "max", "at"],
            &[1, 2, 3, 4, 5, 6],
        );
        for (measure, s) in &d.spread {
            let v = |x: f64| match measure.as_str() {
                m if m.ends_with("_pct") => pct(x),
                m if m.ends_with("_ns") => ns(x.round() as i64),
                "copy_gb_per_s" => format!("{x:.1} GB/s"),
                _ => thousands(x.round() as i64),
            };
            tb.row(vec![
                measure.clone(),
                s.ranks.to_string(),
                v(s.min),
                s.min_at.clone(),
                v(s.median),
                v(s.max),
                s.max_at.clone(),
            ]);
        }
        out += &tb.render();
        for call in &d.next {
            out += &format!(
                "next: {}  ({})\n",
                flameox_engine::operations::command_line::command_line(
                    &call.operation,
                    &call.arguments
                ),
                call.why
            );
        }
    }
    if let Some(rows) = &a.temporal {
        out += "\ntemporal (per device; communication and memory hidden by compute count as compute)\n";
        let mut tb = Table::new(
            &[
                "rank",
                "artifact",
                "device",
                "span",
                "compute",
                "comm",
                "memory",
                "idle",
                "compute %",
                "comm %",
                "memory %",
                "idle %",
            ],
            &[0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        );
        for row in rows {
            let mut cells = key_cells(&row.key);
            cells.extend([
                ns(row.span_ns),
                ns(row.compute_ns),
                ns(row.communication_ns),
                ns(row.memory_ns),
                ns(row.idle_ns),
                pct(row.compute_pct),
                pct(row.communication_pct),
                pct(row.memory_pct),
                pct(row.idle_pct),
            ]);
            tb.row(cells);
        }
        out += &tb.render();
    }
    if let Some(rows) = &a.idle {
        out += "\nidle time per stream\n";
        let mut tb = Table::new(
            &[
                "rank",
                "artifact",
                "device",
                "stream",
                "ops",
                "span",
                "idle",
                "gaps",
                "host wait",
                "kernel wait",
                "other",
            ],
            &[0, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        );
        for row in rows {
            let mut cells = key_cells(&row.key);
            cells.extend([
                id(row.stream),
                thousands(row.operations),
                ns(row.span_ns),
                ns(row.idle_ns),
                thousands(row.gaps),
                ns(row.host_wait_ns),
                ns(row.kernel_wait_ns),
                ns(row.other_ns),
            ]);
            tb.row(cells);
        }
        out += &tb.render();
    }
    if let Some(rows) = &a.overlap {
        out += "\ncommunication overlapped by computation\n";
        let mut tb = Table::new(
            &[
                "rank",
                "artifact",
                "device",
                "communication",
                "overlapped",
                "overlap %",
            ],
            &[0, 2, 3, 4, 5],
        );
        for row in rows {
            let mut cells = key_cells(&row.key);
            cells.extend([
                ns(row.communication_ns),
                ns(row.overlapped_ns),
                row.overlap_pct.map_or("-".to_owned(), pct),
            ]);
            tb.row(cells);
        }
        out += &tb.render();
    }
    for k in a.kernels.iter().flatten() {
        let [rank, artifact] = label(k.rank, &k.artifact_id);
        let types: Vec<String> = k
            .types
            .iter()
            .map(|t| format!("{} {} ({:.1}%)", t.kernel_type, ns(t.total_ns), t.pct))
            .collect();
        out += &format!(
            "\nkernels of rank {rank} ({artifact}): {}\n",
            types.join(", ")
        );
        let mut tb = Table::new(
            &["type", "total", "count", "mean", "min", "max", "name"],
            &[1, 2, 3, 4, 5],
        );
        for row in &k.rows {
            tb.row(vec![
                row.kernel_type.clone(),
                ns(row.total_ns),
                thousands(row.count),
                ns(row.mean_ns.round() as i64),
                ns(row.min_ns),
                ns(row.max_ns),
                cut(&row.name, 70),
            ]);
        }
        out += &tb.render();
        out += &render::footer(k.rows.len(), k.names, None);
        out += "\n";
    }
    for l in a.launches.iter().flatten() {
        let [rank, artifact] = label(l.rank, &l.artifact_id);
        out += &format!(
            "\nlaunches of rank {rank} ({artifact}): {} launch/operation pairs\n",
            thousands(l.launches)
        );
        out += &outliers(
            "short kernels (device time < launch call, call ≤",
            &l.short_kernels,
        );
        out += &outliers("runtime outliers (launch call >", &l.runtime_outliers);
        out += &outliers("launch delay outliers (delay >", &l.launch_delay_outliers);
    }
    if let Some(rows) = &a.bandwidth {
        out += "\nmemcpy / memset bandwidth\n";
        let mut tb = Table::new(
            &[
                "rank",
                "artifact",
                "device",
                "direction",
                "count",
                "bytes",
                "time",
                "GB/s",
                "op min",
                "op median",
                "op max",
            ],
            &[0, 2, 4, 5, 6, 7, 8, 9, 10],
        );
        let rate = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        for row in rows {
            let mut cells = key_cells(&row.key);
            cells.extend([
                row.direction.clone(),
                thousands(row.count),
                render::bytes(row.bytes.max(0) as u64),
                ns(row.time_ns),
                rate(row.gb_per_s),
                rate(row.op_gb_per_s_min),
                rate(row.op_gb_per_s_median),
                rate(row.op_gb_per_s_max),
            ]);
            tb.row(cells);
        }
        out += &tb.render();
    }
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}

fn outliers(title: &str, o: &LaunchOutliers) -> String {
    let mut out = format!(
        "  {title} {}): {}\n",
        ns(o.threshold_ns),
        thousands(o.count)
    );
    for e in o.examples.iter().take(TEXT_EXAMPLES) {
        out += &format!(
            "    call {} / device {} / delay {}  {} ← {}\n",
            ns(e.cpu_duration_ns),
            ns(e.gpu_duration_ns),
            ns(e.launch_delay_ns),
            cut(&e.name, 60),
            e.launch
        );
    }
    out
}
