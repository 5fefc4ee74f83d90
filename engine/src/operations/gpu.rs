//! Declarations of the accelerator and framework analyses: the nsys-style
//! GPU summary, launches and per-stream use, HTA-grade breakdowns, idle
//! gaps with their causes, memory counters and PyTorch operators.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, summary_name, to_value};
use crate::services::QueryContext;
use crate::services::gpu::{self, AcceleratorRequest, GpuSummaryRequest};
use crate::services::gpu_breakdown::{self, GpuBreakdownRequest};
use crate::services::gpu_diagnosis::{self, GpuDiagnosisRequest};
use crate::services::gpu_gaps::{self, GpuGapsRequest};
use crate::services::memory::{self, MemoryRequest};
use crate::services::pytorch::{self, PytorchRequest};
use crate::units::duration_ns;

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "analyze_gpu_summary",
        cli: &["analyze", "gpu-summary"],
        title: "GPU summary",
        description: "nsys-stats-style table per name: total, %, count, avg, median, min, max, stddev of kernels, API calls, memcpy time/size or memset time.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<GpuSummaryRequest>,
        run: Body::Query(run_gpu_summary),
        rows: "rows",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_accelerator_launches",
        cli: &["analyze", "accelerator-launches"],
        title: "Accelerator launches",
        description: "Per phase: direct and graph launches, kernels, launch latency p50/p90/p99 by correlation id, coverage; per stream: busy time, idle gaps, utilization. No runtime or kernel tracks: partial.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<AcceleratorRequest>,
        run: Body::Query(run_accelerator),
        rows: "regions",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_pytorch",
        cli: &["analyze", "pytorch"],
        title: "PyTorch operators",
        description: "torch.profiler traces: operators by self CPU time with the device time they launched, sync and compile time, ProfilerStep durations and warmup ratio, repeated small ops.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<PytorchRequest>,
        run: Body::Query(run_pytorch),
        rows: "rows",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_gpu_breakdown",
        cli: &["analyze", "gpu-breakdown"],
        title: "GPU breakdown (HTA)",
        description: "Per rank and device: temporal (compute/comm/memory/idle), idle per stream (host/kernel wait), comm-compute overlap, kernels, launch outliers, copy bandwidth. HTA's thresholds.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<GpuBreakdownRequest>,
        run: Body::Query(run_breakdown),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_gpu_diagnosis",
        cli: &["analyze", "gpu-diagnosis"],
        title: "GPU diagnosis",
        description: "Launch geometry vs SMs, occupancy, copies and host syncs, collectives (bandwidth, exposed time), ranks side by side (who arrives last, why), unmarked iterations, fusion candidates, critical path, MFU.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<GpuDiagnosisRequest>,
        run: Body::Query(run_diagnosis),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_gpu_gaps",
        cli: &["analyze", "gpu-gaps"],
        title: "GPU gaps",
        description: "Device busy and idle time by why (starved, stalled, before/after), the longest device gaps with what the launching thread did until the launch, low-utilization chunks.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<GpuGapsRequest>,
        run: Body::Query(run_gaps),
        rows: "gaps",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_memory",
        cli: &["analyze", "memory"],
        title: "Memory",
        description: "Memory counters (Kineto allocated/reserved, RSS): first, peak, retained at end, growth per step; allocation totals and top sites; heap profiles (memray, pprof): peak, leaks, top sites.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<MemoryRequest>,
        run: Body::Query(run_memory),
        rows: "series",
        columns: &[],
        terminal: &[],
    },
];

fn run_gpu_summary<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: GpuSummaryRequest = decode(args)?;
        let r = gpu::gpu_summary(qc, &req).await?;
        let noun = if r.by_family {
            "kernel families"
        } else {
            "names"
        };
        let mut summary = format!(
            "{} of {} {noun} in the {} report of {}",
            r.returned,
            r.total,
            r.report.name(),
            r.scope.requested
        );
        if !r.by_family && r.families * 2 <= r.total {
            summary.push_str(&format!(
                " ({} kernel families: family=true groups them)",
                r.families
            ));
        }
        if let Some(top) = r.rows.first() {
            summary.push_str(&format!(
                "; top: {} {:.1} % of the report's total",
                summary_name(&top.name),
                top.percent
            ));
        }
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_accelerator<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: AcceleratorRequest = decode(args)?;
        let r = gpu::accelerator_launches(qc, &req).await?;
        let o = &r.answer.overall;
        let summary = format!(
            "{} kernels from {} direct and {} graph launches on {} streams of {}",
            o.kernels.count,
            o.direct_launches.count,
            o.graph_launches.count,
            r.answer.streams.len(),
            r.scope.requested
        );
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_pytorch<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: PytorchRequest = decode(args)?;
        let r = pytorch::pytorch(qc, &req).await?;
        let mut summary = format!(
            "{} of {} operators of {}; {} steps",
            r.returned,
            r.total,
            r.scope.requested,
            r.answer.steps.len()
        );
        if let Some(top) = r.answer.rows.first() {
            summary.push_str(&format!(
                "; top by self CPU time: {} {}",
                summary_name(&top.name),
                duration_ns(top.self_ns)
            ));
        }
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_breakdown<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: GpuBreakdownRequest = decode(args)?;
        let r = gpu_breakdown::gpu_breakdown(qc, &req).await?;
        let summary = match &r.ranks {
            None => format!(
                "GPU breakdown of {} artifacts ({} with device work)",
                r.artifacts.len(),
                r.answer.artifacts_with_device_work.len()
            ),
            Some(d) => format!(
                "GPU breakdown of {} artifacts ({} with device work); in full: ranks {} ({}); spread over all ranks in `ranks`",
                d.artifacts_total,
                d.with_device_work,
                d.shown.join(", "),
                d.chosen_by
            ),
        };
        let mut answer = Answer::new(summary, to_value(&r)?);
        for scope in &r.targets {
            answer = answer.scoped(scope);
        }
        Ok(answer)
    })
}

fn run_gaps<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: GpuGapsRequest = decode(args)?;
        let r = gpu_gaps::gpu_gaps(qc, &req).await?;
        let a = &r.answer;
        let summary = if a.has_device_activity {
            let devices: Vec<String> = a
                .devices
                .iter()
                .take(2)
                .map(|d| crate::services::summary_headline::device_words(&d.time))
                .collect();
            let classes: Vec<String> = a
                .gaps_by_class
                .iter()
                .map(|(class, t)| {
                    format!("{} {} ({})", t.gaps, class.name(), duration_ns(t.total_ns))
                })
                .collect();
            let mut line = format!(
                "{}{}: {}; {} device gaps of at least {}, {} in all",
                r.scope.requested,
                r.time.words(),
                devices.join("; "),
                a.gaps_found,
                duration_ns(r.min_gap_ns),
                duration_ns(a.gaps_total_ns)
            );
            if !classes.is_empty() {
                line.push_str(&format!(": {}", classes.join(", ")));
            }
            if let Some(g) = a.gaps.first() {
                line.push_str(&format!(
                    "; longest {} {} before {}: {}",
                    duration_ns(g.duration_ns),
                    g.class.name(),
                    g.next_op,
                    crate::services::summary_gpu::cause(g)
                ));
            }
            line.push_str(&format!(
                "; {} chunks busy under {:.0} %",
                a.low_utilization_found,
                r.below * 100.0
            ));
            line
        } else {
            format!("no device activity in {}", r.scope.requested)
        };
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_memory<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: MemoryRequest = decode(args)?;
        let r = memory::memory(qc, &req).await?;
        // A heap profile leads with its peak and leaks.
        let summary = memory::heap_headline(&r).unwrap_or_else(|| {
            format!(
                "{} memory series and {} allocation sites in {}",
                r.answer.series_found, r.answer.sites_found, r.scope.requested
            )
        });
        let mut answer = Answer::new(summary, to_value(&r)?).scoped(&r.scope);
        answer.details = memory::heap_details(&r);
        Ok(answer)
    })
}

fn run_diagnosis<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: GpuDiagnosisRequest = decode(args)?;
        let r = gpu_diagnosis::gpu_diagnosis(qc, &req).await?;
        let summary = gpu_diagnosis::headline(&r);
        let mut answer = Answer::new(summary, to_value(&r)?);
        for scope in &r.targets {
            answer = answer.scoped(scope);
        }
        Ok(answer)
    })
}
