//! `analyze memory`: memory counters in bytes (peak, retained at the end,
//! growth per phase), allocation events (totals, top sites) and heap
//! profiles (memray captures, pprof heap profiles: peak heap, still
//! allocated at the end, allocated, top sites by each) of a run or
//! artifact. Peak RSS of captured runs needs run measurements, which do not
//! exist yet: the answer says so instead of guessing.

use flameox_recipes::ArtifactScope;
pub use flameox_recipes::memory::MemorySeries;
use flameox_recipes::memory::{self, HeapTotals, MemoryAnswer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::query::run_budgeted;
use crate::services::narrower::{Narrowing, narrow};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// What `analyze_memory` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Series and allocation sites returned, each (default 20; heap sites: 10 unless given).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// Something the answer cannot cover yet, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLimitation {
    pub code: String,
    /// `not_yet`: the evidence it needs is not recorded by this build.
    pub status: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    #[serde(flatten)]
    pub answer: MemoryAnswer,
    pub truncated: bool,
    pub limitations: Vec<AnswerLimitation>,
    pub evidence: EvidenceStatus,
}

pub async fn memory(qc: &QueryContext<'_>, req: &MemoryRequest) -> Result<MemoryResult> {
    memory_of(qc, req).await.map_err(|e| {
        narrow(
            qc,
            e,
            Narrowing::whole("analyze_memory", &req.target, req.limit),
        )
    })
}

async fn memory_of(qc: &QueryContext<'_>, req: &MemoryRequest) -> Result<MemoryResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let heap_limit = match req.limit {
        Some(_) => limit,
        None => limit.min(DEFAULT_HEAP_SITES),
    };
    let answer = run_budgeted(
        &session,
        memory::memory(&session.ctx, &artifacts, limit, heap_limit),
    )
    .await?;
    let found = answer.series_found > 0 || !answer.allocations.is_empty() || answer.heap.is_some();
    let mut evidence = answer_status(&session.snapshot, &scope, found, false);
    if !found && evidence.status == "empty" {
        // Memory is recorded only when asked (`profile_memory=True`,
        // Perfetto's process_stats data source): absence proves nothing.
        evidence = EvidenceStatus::new("partial", "memory_counters_missing").with_next(
            "get_run",
            json!({ "target": scope.run_id.as_deref().unwrap_or(&scope.requested) }),
        );
    }
    let heap_cut = answer.heap.as_ref().is_some_and(|h| {
        [&h.leaked, &h.at_peak]
            .iter()
            .any(|l| (l.sites.len() as u64) < l.sites_found)
    });
    let mut limitations = vec![AnswerLimitation {
        code: "captured_run_peak_rss".into(),
        status: "not_yet".into(),
        detail: "peak RSS of captured runs comes from run measurements, which this build does not record yet".into(),
    }];
    if let Some(h) = &answer.heap {
        limitations.extend(heap_limitations(&h.totals));
    }
    Ok(MemoryResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        truncated: (answer.series.len() as u64) < answer.series_found
            || (answer.sites.len() as u64) < answer.sites_found
            || heap_cut,
        answer,
        limitations,
        evidence,
    })
}

/// Heap sites per list in a default answer (the two lists with long file
/// paths would otherwise take the agent's budget).
const DEFAULT_HEAP_SITES: usize = 10;

/// What a heap profile cannot say: an `--aggregate` memray capture keeps
/// no per-allocation history; a pprof heap profile has no high-water mark.
fn heap_limitations(totals: &[HeapTotals]) -> Vec<AnswerLimitation> {
    let mut out = Vec::new();
    let no_total = totals
        .iter()
        .filter(|t| t.allocated_bytes.is_none())
        .count();
    if no_total > 0 {
        out.push(AnswerLimitation {
            code: "heap_allocated_total_missing".into(),
            status: "not_in_input".into(),
            detail: format!("{no_total} heap profile(s) record no total allocated: a memray --aggregate capture keeps only what was live at the peak and at the end"),
        });
    }
    let no_peak = totals.iter().filter(|t| t.peak_bytes.is_none()).count();
    if no_peak > 0 {
        out.push(AnswerLimitation {
            code: "heap_peak_missing".into(),
            status: "not_in_input".into(),
            detail: format!("{no_peak} heap profile(s) record no high-water mark (a pprof heap profile holds what was in use when it was written)"),
        });
    }
    out
}

/// `42,305`.
fn count_text(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// `3.76 MiB` — three significant digits in binary units.
fn bytes_text(bytes: i64) -> String {
    let v = bytes.unsigned_abs() as f64;
    let sign = if bytes < 0 { "-" } else { "" };
    let (value, unit) = match v {
        v if v >= (1u64 << 30) as f64 => (v / (1u64 << 30) as f64, "GiB"),
        v if v >= (1u64 << 20) as f64 => (v / (1u64 << 20) as f64, "MiB"),
        v if v >= 1024.0 => (v / 1024.0, "KiB"),
        _ => return format!("{bytes} B"),
    };
    format!("{sign}{} {unit}", crate::units::sig3(value))
}

/// The answer's headline when it holds a heap profile: peak (and when),
/// still allocated at the end with the top site, allocated in all.
pub fn heap_headline(r: &MemoryResult) -> Option<String> {
    let h = r.answer.heap.as_ref()?;
    let t = h
        .totals
        .iter()
        .max_by_key(|t| (t.peak_bytes, t.leaked_bytes))?;
    let mut parts = Vec::new();
    if let Some(peak) = t.peak_bytes {
        let mut p = format!(
            "peak heap {} in {} allocations",
            bytes_text(peak),
            count_text(t.peak_allocations.unwrap_or(0))
        );
        let start = r
            .answer
            .series
            .iter()
            .filter(|s| s.artifact_id == t.artifact_id)
            .map(|s| s.first_ns)
            .min();
        if let (Some(at), Some(start)) = (t.peak_ns, start) {
            p.push_str(&format!(
                " (reached no earlier than {} after the first memory sample)",
                crate::units::duration_ns(at.saturating_sub(start))
            ));
        }
        parts.push(p);
    }
    if let Some(leaked) = t.leaked_bytes {
        // memray's word; a pprof heap profile's in-use bytes are what was
        // live when it was written, not leaks.
        let leaks = if t.peak_bytes.is_some() {
            " (leaks)"
        } else {
            ""
        };
        let mut p = format!(
            "{} still allocated at the end in {} allocations{leaks}",
            bytes_text(leaked),
            count_text(t.leaked_allocations.unwrap_or(0))
        );
        if let Some(top) = h.leaked.sites.first() {
            p.push_str(&format!(
                ", top {} {:.1} % of {}",
                site_text(&top.function, top.file.as_deref(), top.line),
                top.percent,
                h.leaked.percent_of
            ));
        }
        parts.push(p);
    }
    if let Some(allocated) = t.allocated_bytes {
        parts.push(format!(
            "{} allocated in {} allocations",
            bytes_text(allocated),
            count_text(t.allocations.unwrap_or(0))
        ));
    }
    let profiles = match h.totals.len() {
        1 => String::new(),
        n => format!(" (the largest of {n} heap profiles)"),
    };
    Some(format!(
        "{}{profiles}; {} memory series in {}",
        parts.join("; "),
        r.answer.series_found,
        r.scope.requested
    ))
}

/// Lines a person reads under the series table: the headline, then each
/// heap site list with its share of the list's denominator.
pub fn heap_details(r: &MemoryResult) -> Vec<String> {
    let (Some(h), Some(headline)) = (r.answer.heap.as_ref(), heap_headline(r)) else {
        return Vec::new();
    };
    let mut out = vec![String::new(), format!("heap: {headline}")];
    for (title, list) in [
        ("still allocated at the end", &h.leaked),
        ("live at the peak", &h.at_peak),
    ] {
        if list.sites.is_empty() {
            continue;
        }
        out.push(format!(
            "top sites {title} ({} of {}; % of {}):",
            list.sites.len(),
            list.sites_found,
            list.percent_of
        ));
        for s in &list.sites {
            out.push(format!(
                "  {:>10}  {:>5.1} %  {:>8} allocs  {}",
                bytes_text(s.bytes),
                s.percent,
                count_text(s.allocations),
                site_text(&s.function, s.file.as_deref(), s.line)
            ));
        }
    }
    out
}

/// `function (file:line)` with the file's last component.
fn site_text(function: &str, file: Option<&str>, line: Option<i64>) -> String {
    let name = crate::services::summary::shorten(function);
    match (file, line) {
        (Some(f), Some(l)) => format!("{name} ({}:{l})", f.rsplit('/').next().unwrap_or(f)),
        (Some(f), None) => format!("{name} ({})", f.rsplit('/').next().unwrap_or(f)),
        _ => name,
    }
}
