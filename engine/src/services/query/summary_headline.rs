//! The one line `summarize_target` leads with. It must point at the cause,
//! so it is chosen by what the trace is:
//!
//! - a GPU trace: each device's busy time over the steps (or the trace)
//!   and its idle time by why — starved (the host was late), stalled
//!   (queued work held by a dependency), before the first or after the
//!   last activity — with the longest gap's explanation;
//! - a browser trace: the renderer that loaded the page, by its URL, and
//!   that thread's heaviest meaningful frame;
//! - otherwise: the busiest thread by time not spent waiting and its
//!   heaviest meaningful frame.
//!
//! A meaningful frame is neither a wait nor a generic wrapper (`RunTask`,
//! an event loop's run): those say where a thread sat, not what it did.
//! Every share names its span or denominator.

use flameox_recipes::gpu_diagnosis::rules::GPU_STARVATION;
use flameox_recipes::time_accounting::DeviceTime;

use super::summary::{HotThread, SummaryResult};
use super::summary_gpu::GpuSummary;
use crate::units::{duration_ns, metric_words};

/// The headline of a summary.
pub(crate) fn headline(r: &SummaryResult) -> String {
    let what = match r.inputs.as_slice() {
        [one] => format!(
            "{} ({}{})",
            one.name,
            one.kind,
            one.producer
                .as_deref()
                .map(|p| format!(", {p}"))
                .unwrap_or_default()
        ),
        many => format!("{} inputs", r.inputs_total.unwrap_or(many.len())),
    };
    let span = if r.duration_ns > 0 {
        format!("{} trace", duration_ns(r.duration_ns))
    } else {
        "no timeline (aggregated stacks)".to_owned()
    };
    let mut line = format!("{what}: {span}");
    if let Some(gpu) = &r.gpu {
        line.push_str("; ");
        line.push_str(&gpu_words(gpu));
        // The anti-pattern with the most time at stake, named by its rule
        // (starvation's numbers are the device's starved time just said).
        if let Some(d) = gpu.diagnoses.first() {
            match d.rule == GPU_STARVATION.name {
                true => line.push_str(&format!("; diagnosed {}", d.rule)),
                false => line.push_str(&format!("; diagnosed {}: {}", d.rule, d.evidence)),
            }
        }
    }
    if let Some(p) = &r.page {
        line.push_str(&format!(
            "; page {} in renderer pid {}",
            p.url,
            p.pid.map_or_else(|| "?".into(), |p| p.to_string())
        ));
        let marks: Vec<String> = p
            .milestones
            .iter()
            .filter(|m| {
                matches!(
                    m.name.as_str(),
                    "domContentLoadedEventEnd" | "loadEventEnd" | "firstContentfulPaint"
                )
            })
            .map(|m| {
                let name = match m.name.as_str() {
                    "domContentLoadedEventEnd" => "DOMContentLoaded",
                    "loadEventEnd" => "load",
                    "firstContentfulPaint" => "first contentful paint",
                    other => other,
                };
                format!("{name} at {}", duration_ns(m.after_navigation_ns))
            })
            .collect();
        if !marks.is_empty() {
            line.push_str(&format!(" ({} after navigation)", marks.join(", ")));
        }
    }
    let framed = r.hot_threads.iter().any(|t| !t.frames.is_empty());
    if let Some(t) = r.hot_threads.first().filter(|_| framed) {
        line.push_str("; ");
        line.push_str(&thread_words(r, t));
    } else if let Some(cpu) = &r.cpu {
        // A scheduler-only trace: no traced calls, so where the CPUs went.
        line.push_str("; ");
        line.push_str(&cpu_words(r, cpu));
    }
    line
}

/// `2 CPUs on CPU 3.83 s = 62 % of 2 × 3.08 s; busiest rustc (tid 1) …`.
fn cpu_words(r: &SummaryResult, cpu: &super::summary::CpuSummary) -> String {
    let mut out = format!(
        "threads on CPU {} = {} % of {} CPUs × the trace, {} runnable (waiting for a CPU)",
        duration_ns(cpu.on_cpu_ns),
        cpu.on_cpu_pct_of_capacity,
        cpu.cpus,
        duration_ns(cpu.runnable_ns)
    );
    if let Some(i) = cpu
        .interrupts
        .as_ref()
        .filter(|i| i.irq_ns + i.softirq_ns > 0)
    {
        out.push_str(&format!(
            "; interrupts {} (irq {} + softirq {}) = {} % of {} CPUs × the trace",
            duration_ns(i.irq_ns + i.softirq_ns),
            duration_ns(i.irq_ns),
            duration_ns(i.softirq_ns),
            i.total_pct_of_capacity,
            cpu.cpus
        ));
    }
    let busiest = r
        .threads
        .iter()
        .filter(|t| t.on_cpu_ns.unwrap_or(0) > 0)
        .max_by_key(|t| (t.on_cpu_ns, std::cmp::Reverse(t.tid)));
    if let Some(t) = busiest {
        let who = match (&t.thread, t.tid) {
            (Some(name), Some(tid)) => format!("{name} (tid {tid})"),
            (Some(name), None) => name.clone(),
            (None, Some(tid)) => format!("tid {tid}"),
            (None, None) => t.label.clone(),
        };
        out.push_str(&format!(
            "; most on CPU: {who} {} = {} % of the trace",
            duration_ns(t.on_cpu_ns.unwrap_or(0)),
            t.on_cpu_pct_of_trace.unwrap_or(0.0)
        ));
        if let Some(wait) = t.runnable_ns.filter(|w| *w > 0) {
            out.push_str(&format!(", {} runnable", duration_ns(wait)));
        }
    }
    out
}

/// The busiest meaningful frame of a hot thread, with its share.
fn thread_words(r: &SummaryResult, t: &HotThread) -> String {
    let who = match (&t.thread, t.tid) {
        (Some(name), Some(tid)) if name.contains(&tid.to_string()) => name.clone(),
        (Some(name), Some(tid)) => format!("{name} (tid {tid})"),
        (Some(name), None) => name.clone(),
        (None, Some(tid)) => format!("tid {tid}"),
        (None, None) => t.label.clone(),
    };
    let busy = r
        .threads
        .iter()
        .find(|x| x.tid == t.tid && x.tid.is_some())
        .and_then(|x| {
            x.busy_ns
                .zip(x.busy_pct_of_trace)
                .map(|b| (b, x.waiting_ns))
        });
    let mut out = match busy {
        Some(((ns, pct), waiting)) if ns > 0 => {
            let waiting = waiting
                .filter(|w| *w > 0)
                .map(|w| format!(", {} of it waiting", duration_ns(w)))
                .unwrap_or_default();
            format!(
                "{who} in traced calls {} = {pct} % of the trace{waiting}",
                duration_ns(ns)
            )
        }
        _ => who,
    };
    let path: Vec<String> = t
        .hot_path
        .iter()
        .filter(|s| s.role.is_none())
        .map(|s| {
            format!(
                "{} {:.0} %",
                super::summary::brief(&s.function),
                s.inclusive_pct_of_thread
            )
        })
        .collect();
    if !path.is_empty() {
        out.push_str(&format!(
            ", hot path (inclusive % of its {}): {}",
            metric_words(&t.metric),
            path.join(" → ")
        ));
    }
    // A thread's self values sum to its time in traced calls (wall time)
    // or to all of its samples: the share's denominator, named.
    let whole = if t.metric == "trace.wall_ns" {
        "its time in traced calls".to_owned()
    } else {
        format!("its {}", metric_words(&t.metric))
    };
    match t.frames.iter().find(|f| f.role.is_none()) {
        Some(f) => out.push_str(&format!(
            ", top frame {} (self {:.1} % of {whole})",
            super::summary::brief(&f.function),
            f.self_pct_of_thread,
        )),
        None => {
            if let Some(f) = t.frames.first() {
                out.push_str(&format!(
                    ", mostly {} in {} (self {:.1} % of {whole})",
                    f.role.as_deref().unwrap_or("in"),
                    f.function,
                    f.self_pct_of_thread,
                ));
            }
        }
    }
    out
}

/// Device busy and idle by why, for the busiest device (and how many more).
fn gpu_words(g: &GpuSummary) -> String {
    let Some(d) = g.devices.first() else {
        return "no device activity".into();
    };
    let mut out = device_words(d);
    let more = g.devices_total.max(g.devices.len()).saturating_sub(1);
    if more > 0 {
        out.push_str(&format!(" ({more} more devices in gpu.devices)"));
    }
    if let Some(gap) = g.longest.first() {
        out.push_str(&format!(
            "; longest gap {} {} before {}: {}",
            duration_ns(gap.duration_ns),
            gap.class.name(),
            super::summary::brief(&gap.next_op),
            gap.cause
        ));
    }
    out
}

/// `GPU 0 busy 309 µs = 3.7 % of the trace (8.39 ms); idle 8.08 ms: …`.
pub(crate) fn device_words(d: &DeviceTime) -> String {
    let name = match d.device {
        Some(n) => format!("GPU {n}"),
        None => "GPU".into(),
    };
    let span = match &d.span.label {
        Some(l) => format!("{} {l}", d.span.name.words()),
        None => d.span.name.words().to_owned(),
    };
    let i = &d.idle;
    let mut parts: Vec<(i64, &str)> = vec![
        (i.starved_ns, "starved (host late)"),
        (i.stalled_ns, "stalled (queued work held)"),
        (i.unlinked_ns, "in gaps with no recorded launch"),
        (i.before_first_activity_ns, "before its first activity"),
        (i.after_last_activity_ns, "after its last activity"),
    ];
    parts.retain(|(ns, _)| *ns > 0);
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    let idle: Vec<String> = parts
        .iter()
        .map(|(ns, what)| format!("{} {what}", duration_ns(*ns)))
        .collect();
    let mut out = format!(
        "{name} busy {} = {} % of {span} ({})",
        duration_ns(d.busy_ns),
        d.busy_pct_of_span,
        duration_ns(d.span.dur_ns)
    );
    if d.idle_ns > 0 {
        out.push_str(&format!(
            ", idle {}: {}",
            duration_ns(d.idle_ns),
            idle.join(", ")
        ));
    }
    out
}
