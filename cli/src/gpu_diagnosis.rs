//! Text rendering of `flameox analyze gpu-diagnosis`: the headline, then
//! one table per section (ranks, geometry, copies and host waits,
//! collectives, iterations, fusion candidates, critical path; MFU in
//! [`crate::gpu_diagnosis_mfu`]). Presentation only; `--json` prints the service result.

use flameox_engine::services::gpu_diagnosis::{GpuDiagnosisResult, headline};
use flameox_recipes::gpu_diagnosis::geometry::LaunchShape;

use crate::gpu_breakdown::{id, ns, short};
use crate::render::{self, Table, cut, thousands};

fn gbps(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.1} GB/s"))
}

fn dims(d: &[i64; 3]) -> String {
    format!("{}×{}×{}", d[0], d[1], d[2])
}

pub(crate) fn render(r: &GpuDiagnosisResult) -> String {
    let a = &r.answer;
    let mut out = format!("{}\n", headline(r));
    if let Some(k) = a.ranks.as_ref().filter(|k| k.ranks_total >= 2) {
        out += &format!(
            "\nranks ({} of {} shown; {} collectives matched)\n",
            k.rows.len(),
            k.ranks_total,
            k.matched_collectives
        );
        let mut tb = Table::new(
            &[
                "rank", "artifact", "span", "compute", "comm", "idle", "waited", "last at",
            ],
            &[2, 3, 4, 5, 6, 7],
        );
        for row in &k.rows {
            tb.row(vec![
                id(row.rank),
                short(&row.artifact_id),
                ns(row.span_ns),
                ns(row.compute_ns),
                ns(row.communication_ns),
                ns(row.idle_ns),
                ns(row.wait_ns),
                thousands(row.times_last),
            ]);
        }
        out += &tb.render();
        for h in &k.holders {
            out += &format!(
                "rank {} arrived last {} times, {} late in all: {} (compute +{}, idle +{} vs the median rank)\n",
                id(h.rank),
                h.times_last,
                ns(h.late_ns),
                h.cause,
                ns(h.compute_excess_ns),
                ns(h.idle_excess_ns)
            );
            for d in &h.kernel_differences {
                out += &format!(
                    "  {}: {} against {} on the median rank\n",
                    cut(&d.name, 80),
                    ns(d.rank_ns),
                    ns(d.median_rank_ns)
                );
            }
        }
    }
    for d in a.geometry.iter().flatten() {
        out += &format!(
            "\ngeometry of rank {} {} device {}: {} SMs ({}); {} compute kernels, {} in kernels with fewer blocks than SMs ({:.1} % of compute time)\n",
            id(d.key.rank),
            short(&d.key.artifact_id),
            id(d.key.device),
            id(d.sm_count),
            d.sm_count_source.as_deref().unwrap_or("unknown"),
            thousands(d.compute_kernels),
            ns(d.underfilled_ns),
            d.underfilled_pct_of_compute
        );
        if let Some(basis) = &d.occupancy_basis {
            out += &format!("theoretical occupancy (limited by) from {basis}\n");
        }
        let mut tb = Table::new(
            &[
                "kernel",
                "count",
                "total",
                "% compute",
                "grid",
                "block",
                "regs",
                "smem",
                "blocks/SM",
                "occupancy",
            ],
            &[1, 2, 3, 6, 7, 8, 9],
        )
        .shorten(&[0]);
        for s in &d.shapes {
            tb.row(vec![
                s.name.clone(),
                thousands(s.count),
                ns(s.total_ns),
                format!("{:.1}", s.time_pct_of_compute),
                dims(&s.grid),
                dims(&s.block),
                id(s.registers_per_thread),
                id(s.shared_memory_bytes),
                s.blocks_per_sm.map_or("-".into(), |b| format!("{b:.2}")),
                occupancy(s),
            ]);
        }
        out += &tb.render();
    }
    if let Some(c) = &a.copies {
        if !c.rows.is_empty() {
            out += "\ncopies\n";
            let mut tb = Table::new(
                &[
                    "rank",
                    "device",
                    "direction",
                    "memory",
                    "count",
                    "bytes",
                    "time",
                    "rate",
                    "of link",
                ],
                &[4, 5, 6, 7],
            );
            for row in &c.rows {
                tb.row(vec![
                    id(row.key.rank),
                    id(row.key.device),
                    row.direction.clone(),
                    format!(
                        "{} → {}",
                        row.src_kind.as_deref().unwrap_or("?"),
                        row.dst_kind.as_deref().unwrap_or("?")
                    ),
                    thousands(row.count),
                    render::bytes(row.bytes.max(0) as u64),
                    ns(row.time_ns),
                    gbps(row.gb_per_s),
                    match (&row.link, row.pct_of_link) {
                        (Some(l), Some(p)) => format!("{p:.0} % of {}", l.link),
                        _ => "-".to_owned(),
                    },
                ]);
            }
            out += &tb.render();
        }
        for w in &c.host_waits {
            out += &format!(
                "\nhost waits of rank {} {}: {} synchronize calls ({}), {} synchronous copies ({}), {} kernel launches\n",
                id(w.rank),
                short(&w.artifact_id),
                thousands(w.sync_calls),
                ns(w.sync_ns),
                thousands(w.synchronous_copies),
                ns(w.synchronous_copy_ns),
                thousands(w.kernel_launches)
            );
        }
    }
    if let Some(c) = a.collectives.as_ref().filter(|c| !c.rows.is_empty()) {
        out += "\ncollectives\n";
        let mut tb = Table::new(
            &[
                "rank",
                "collective",
                "dtype",
                "ranks",
                "bytes",
                "count",
                "time",
                "median",
                "exposed",
                "busbw",
            ],
            &[3, 4, 5, 6, 7, 8, 9],
        )
        .shorten(&[1]);
        for row in &c.rows {
            tb.row(vec![
                id(row.rank),
                row.collective.clone(),
                row.dtype.clone().unwrap_or_else(|| "-".into()),
                id(row.group_size),
                row.bytes
                    .map_or("-".into(), |b| render::bytes(b.max(0) as u64)),
                thousands(row.count),
                ns(row.time_ns),
                ns(row.median_ns),
                ns(row.exposed_ns),
                gbps(row.busbw_gb_per_s),
            ]);
        }
        out += &tb.render();
    }
    if let Some(m) = a.collectives.as_ref().and_then(|c| c.mpi.as_ref()) {
        out += &crate::gpu_diagnosis_mpi::render(m);
    }
    if let Some(i) = a.iterations.as_ref().filter(|i| !i.streams.is_empty()) {
        out += "\niterations (no markers needed)\n";
        let mut tb = Table::new(
            &[
                "rank",
                "device",
                "stream",
                "ops/iter",
                "match",
                "iterations",
                "median",
                "min",
                "max",
                "variation",
                "starts with",
            ],
            &[3, 4, 5, 6, 7, 8, 9],
        )
        .shorten(&[10]);
        for s in &i.streams {
            tb.row(vec![
                id(s.key.rank),
                id(s.key.device),
                id(s.stream),
                thousands(s.period_operations as i64),
                format!("{:.3}", s.match_ratio),
                thousands(s.iterations as i64),
                ns(s.median_ns),
                ns(s.min_ns),
                ns(s.max_ns),
                format!("{:.1}%", s.variation_pct),
                s.anchor.clone(),
            ]);
        }
        out += &tb.render();
    }
    for f in a
        .fusion
        .iter()
        .flatten()
        .filter(|f| !f.candidates.is_empty())
    {
        out += &format!(
            "\nfusion candidates of rank {} {} ({} of {} kernels under {}, back to back within {})\n",
            id(f.rank),
            short(&f.artifact_id),
            thousands(f.short_kernels as i64),
            thousands(f.kernels as i64),
            ns(f.short_kernel_ns),
            ns(f.max_gap_ns)
        );
        let mut tb = Table::new(
            &[
                "occurrences",
                "launches saved",
                "kernel time",
                "gaps",
                "kernels",
            ],
            &[0, 1, 2, 3],
        )
        .shorten(&[4]);
        for c in &f.candidates {
            tb.row(vec![
                thousands(c.occurrences as i64),
                thousands(c.launches_saved as i64),
                ns(c.kernel_ns),
                ns(c.gap_ns),
                c.kernels.join(" → "),
            ]);
        }
        out += &tb.render();
    }
    for p in a.critical_path.iter().flatten() {
        out += &format!(
            "\ncritical path of rank {} {}: {} over {}\n",
            id(p.key.rank),
            short(&p.key.artifact_id),
            ns(p.length_ns),
            ns(p.window_ns.1 - p.window_ns.0)
        );
        for b in p.by_bound.iter().filter(|b| b.ns > 0) {
            out += &format!("  {:>6.2} %  {}  {}\n", b.pct_of_path, ns(b.ns), b.bound);
        }
        let mut tb =
            Table::new(&["event", "kind", "bound", "time", "edges"], &[3, 4]).shorten(&[0]);
        for e in &p.top {
            tb.row(vec![
                e.name.clone(),
                e.kind.clone(),
                e.bound.clone(),
                ns(e.ns),
                thousands(e.count as i64),
            ]);
        }
        out += &tb.render();
        for c in &p.caveats {
            out += &format!("  caveat: {c}\n");
        }
    }
    if let Some(m) = &a.mfu {
        out += &crate::gpu_diagnosis_mfu::render(m);
    }
    out
}

/// `62 % (registers)`: a shape's theoretical occupancy and its limiter.
fn occupancy(s: &LaunchShape) -> String {
    match (s.theoretical_occupancy_pct, s.occupancy_limited_by) {
        (Some(pct), Some(by)) => format!("{pct:.0} % ({})", by.words()),
        _ => "-".into(),
    }
}
