//! Text rendering of `analyze gpu-gaps` and `analyze memory` (kept out of
//! `analyze.rs` so each file stays readable); every number comes from the
//! engine's result models.

use flameox_engine::services::gpu_gaps::GpuGapsResult;
use flameox_engine::services::gpu_gaps::HostActivity;
use flameox_engine::services::memory::{MemoryResult, MemorySeries};

use crate::render::{self, Table, cut, thousands};

fn id(v: Option<i64>) -> String {
    v.map_or("-".to_owned(), |v| v.to_string())
}

/// `+1.2 MiB` / `-512 B` for a signed byte amount.
fn signed_bytes(v: f64) -> String {
    let text = render::bytes(v.abs().round() as u64);
    if v > 0.0 {
        format!("+{text}")
    } else if v < 0.0 {
        format!("-{text}")
    } else {
        text
    }
}

fn bytes(v: f64) -> String {
    if v < 0.0 {
        signed_bytes(v)
    } else {
        render::bytes(v.round() as u64)
    }
}

/// The host lines under one gap or chunk.
fn host_lines(host: &HostActivity) -> String {
    let mut out = format!("    host busy {:.1}% of it", host.covered_share * 100.0);
    if host.top.is_empty() {
        return out + "\n";
    }
    out += ":\n";
    for s in &host.top {
        let thread = s
            .thread
            .clone()
            .or(s.tid.map(|t| t.to_string()))
            .unwrap_or_else(|| "-".to_owned());
        out += &format!(
            "      {:>10} self ({:>10} incl) {} [{}] on {}\n",
            render::duration_ns(s.self_overlap_ns),
            render::duration_ns(s.overlap_ns),
            cut(&s.name, 60),
            s.kind,
            cut(&thread, 30),
        );
    }
    if let Some(s) = host.samples.as_ref().filter(|s| s.samples > 0) {
        let top: Vec<String> = s
            .top
            .iter()
            .map(|f| format!("{} ({})", cut(&f.function, 50), f.samples))
            .collect();
        out += &format!(
            "      CPU samples: {}, in {}
",
            s.samples,
            top.join(", ")
        );
    }
    if let Some(text) = &host.busy_elsewhere {
        out += &format!(
            "      busy elsewhere: {text}
"
        );
    }
    out
}

pub(crate) fn render_gpu_gaps(r: &GpuGapsResult) -> String {
    let a = &r.answer;
    let mut out = format!("gpu time of {}{}\n", r.scope.requested, r.time.words());
    let mut t = Table::new(
        &[
            "device",
            "busy",
            "% span",
            "idle",
            "starved",
            "stalled",
            "before 1st",
            "after last",
            "span",
        ],
        &[1, 2, 3, 4, 5, 6, 7],
    );
    for d in &a.devices {
        let time = &d.time;
        let span = match &time.span.label {
            Some(l) => format!("{} {l}", time.span.name.words()),
            None => time.span.name.words().to_owned(),
        };
        t.row(vec![
            id(time.device),
            render::duration_ns(time.busy_ns),
            format!("{:.1}%", time.busy_pct_of_span),
            render::duration_ns(time.idle_ns),
            render::duration_ns(time.idle.starved_ns),
            render::duration_ns(time.idle.stalled_ns),
            render::duration_ns(time.idle.before_first_activity_ns),
            render::duration_ns(time.idle.after_last_activity_ns),
            format!("{} ({})", span, render::duration_ns(time.span.dur_ns)),
        ]);
    }
    out += &t.render();
    out += &format!(
        "\ndevice gaps ≥ {} (no stream busy): {} totalling {}\n",
        render::duration_ns(r.min_gap_ns),
        thousands(a.gaps_found as i64),
        render::duration_ns(a.gaps_total_ns),
    );
    for g in &a.gaps {
        out += &format!(
            "  {} {} on device {} at {}: after {} → before {} (stream {})\n",
            render::duration_ns(g.duration_ns),
            g.class.name(),
            id(g.device),
            g.start_ns,
            cut(g.prev_op.as_deref().unwrap_or("-"), 50),
            cut(&g.next_op, 50),
            id(g.next_stream),
        );
        if let Some(q) = g.queued_for_ns {
            out += &format!(
                "    queued {} before it started: held by {}\n",
                render::duration_ns(q),
                g.waited_on.as_deref().unwrap_or("-")
            );
        }
        if let Some(late) = g.host_late_ns {
            out += &format!(
                "    launched {} after the device went idle\n",
                render::duration_ns(late)
            );
        }
        if !g.host.time_shares.is_empty() {
            let shares: Vec<String> = g
                .host
                .time_shares
                .iter()
                .map(|s| format!("{:.0}% {}", s.share * 100.0, cut(&s.what, 40)))
                .collect();
            out += &format!("    launching thread: {}\n", shares.join(", "));
        }
        out += &host_lines(&g.host);
    }
    out += &render::footer(a.gaps.len(), a.gaps_found, None);
    out += &format!(
        "\nlow-utilization chunks (busy < {:.0}%): {}\n",
        r.below * 100.0,
        thousands(a.low_utilization_found as i64)
    );
    for c in &a.low_utilization {
        out += &format!(
            "  device {} chunk {} [{}, {}) busy {:.1}% ({})\n",
            id(c.device),
            c.chunk,
            c.start_ns,
            c.end_ns,
            c.busy_fraction * 100.0,
            render::duration_ns(c.busy_ns),
        );
        out += &host_lines(&c.host);
    }
    out += &render::footer(a.low_utilization.len(), a.low_utilization_found, None);
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}

/// `[memory] device 0 / Total Allocated`, or the series name alone.
fn label(s: &MemorySeries) -> String {
    match &s.track {
        Some(track) if *track != s.series => format!("{track} / {}", s.series),
        _ => s.series.clone(),
    }
}

pub(crate) fn render_memory(r: &MemoryResult) -> String {
    let a = &r.answer;
    let mut out = format!("memory of {}\n", r.scope.requested);
    let mut t = Table::new(
        &[
            "peak", "first", "last", "retained", "min", "samples", "pid", "device", "series",
        ],
        &[0, 1, 2, 3, 4, 5, 6, 7],
    );
    for s in &a.series {
        let label = label(s);
        t.row(vec![
            bytes(s.peak),
            bytes(s.first),
            bytes(s.last),
            signed_bytes(s.retained),
            bytes(s.min),
            thousands(s.samples),
            id(s.pid),
            id(s.device),
            cut(&label, 50),
        ]);
    }
    out += &t.render();
    out += &render::footer(a.series.len(), a.series_found, None);
    out += "\n";
    for s in a.series.iter().filter(|s| !s.phases.is_empty()) {
        out += &format!("\ngrowth per phase of {}:\n", label(s));
        let mut p = Table::new(
            &["growth", "at start", "at end", "peak", "phase"],
            &[0, 1, 2, 3],
        );
        for g in &s.phases {
            p.row(vec![
                signed_bytes(g.growth),
                bytes(g.start_value),
                bytes(g.end_value),
                g.peak_in_phase.map_or("-".to_owned(), bytes),
                cut(&g.phase, 40),
            ]);
        }
        out += &p.render();
    }
    if !a.allocations.is_empty() {
        out += "\nallocation events\n";
        let mut al = Table::new(
            &["device", "allocs", "allocated", "frees", "freed"],
            &[0, 1, 2, 3, 4],
        );
        for x in &a.allocations {
            al.row(vec![
                id(x.device),
                thousands(x.allocations),
                render::bytes(x.allocated_bytes.max(0) as u64),
                thousands(x.frees),
                render::bytes(x.freed_bytes.max(0) as u64),
            ]);
        }
        out += &al.render();
        out += "\ntop allocation sites\n";
        let mut st = Table::new(&["bytes", "allocs", "device", "site"], &[0, 1, 2]);
        for s in &a.sites {
            st.row(vec![
                render::bytes(s.bytes.max(0) as u64),
                thousands(s.allocations),
                id(s.device),
                cut(&s.site, 60),
            ]);
        }
        out += &st.render();
        out += &render::footer(a.sites.len(), a.sites_found, None);
        out += "\n";
    }
    for l in &r.limitations {
        out += &format!("\n{} ({}): {}", l.code, l.status, l.detail);
    }
    out += &render::evidence_line(&r.evidence.status, &r.evidence.reason);
    out
}
