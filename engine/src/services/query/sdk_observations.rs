//! The SDK observations section of `analyze_execution`: what an
//! instrumented program reported through OpenTelemetry (an `otlp_json`
//! artifact of the run) — its spans by name (count, total and self time;
//! self time is a span's time less its children on its lane, see
//! `extractors/src/otlp/lanes.rs`) and its metric series (points, last,
//! minimum, maximum) — and, against a base run, the span names whose total
//! time moved most and the series whose last value changed. Composes
//! `analyze_hotspots` and the counter-series recipe; no query of its own.

use std::collections::BTreeMap;

use flameox_recipes::ArtifactScope;
use flameox_recipes::counter_series::{CounterSeries, counter_series};
use serde::{Deserialize, Serialize};

use super::analyze::{HotspotsRequest, analyze_hotspots};
use crate::error::Result;
use crate::query::run_budgeted;
use crate::services::QueryContext;

/// Span names read before ranking.
const READ_NAMES: usize = 1000;

/// The artifact kind SDK observations are stored as.
pub const SDK_OBSERVATIONS_KIND: &str = "otlp_json";

/// The spans of one name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanName {
    pub name: String,
    /// The span kind (`server`, `client`, `internal`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub count: i64,
    /// Summed duration of the spans (a span nested in one of the same name
    /// counted once).
    pub total_ns: i64,
    /// Summed time not inside a child on the same lane.
    pub self_ns: i64,
}

/// What the run's OTLP artifact holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SdkObservationsSection {
    pub artifact_id: String,
    /// Spans in the artifact.
    pub spans: i64,
    /// Distinct span names (all of them counted when at most 1000).
    pub span_names: usize,
    /// The `limit` names with the largest total time.
    pub slowest_spans: Vec<SpanName>,
    /// Metric series (one per metric and attribute set; histograms as
    /// `.count`, `.sum`, `.min`, `.max`).
    pub metric_series: u64,
    /// The first `limit` series by name.
    pub metrics: Vec<CounterSeries>,
}

/// A span name whose total time changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanDelta {
    pub name: String,
    pub base_count: i64,
    pub target_count: i64,
    pub base_total_ns: i64,
    pub target_total_ns: i64,
    pub delta_total_ns: i64,
}

/// A metric series whose last value changed (or that only one run has).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    pub series: String,
    pub base_last: Option<f64>,
    pub target_last: Option<f64>,
}

/// Every span name of `artifact` (at most [`READ_NAMES`]).
async fn span_names(qc: &QueryContext<'_>, artifact: &str) -> Result<Vec<SpanName>> {
    let page = analyze_hotspots(
        qc,
        &HotspotsRequest {
            target: artifact.to_owned(),
            limit: Some(READ_NAMES),
            ..HotspotsRequest::default()
        },
    )
    .await?;
    let mut names: Vec<SpanName> = page
        .rows
        .into_iter()
        .map(|r| SpanName {
            name: r.function,
            kind: r.category,
            count: r.count,
            total_ns: r.inclusive_value,
            self_ns: r.self_value,
        })
        .collect();
    names.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    Ok(names)
}

async fn series(
    qc: &QueryContext<'_>,
    artifact: &str,
    limit: usize,
) -> Result<(u64, Vec<CounterSeries>)> {
    let session = qc.session(None)?;
    let scope = ArtifactScope {
        artifact_ids: vec![artifact.to_owned()],
    };
    run_budgeted(&session, counter_series(&session.ctx, &scope, limit)).await
}

/// What was read of one OTLP artifact: every span name and series (at
/// most 1000 each), for its section and for a comparison.
pub struct SdkReads {
    artifact: String,
    names: Vec<SpanName>,
    series_total: u64,
    series: Vec<CounterSeries>,
}

/// Reads an OTLP artifact's span names and metric series once.
pub async fn read_sdk(qc: &QueryContext<'_>, artifact: &str) -> Result<SdkReads> {
    let names = span_names(qc, artifact).await?;
    let (series_total, series) = series(qc, artifact, READ_NAMES).await?;
    Ok(SdkReads {
        artifact: artifact.to_owned(),
        names,
        series_total,
        series,
    })
}

/// The section for the run's OTLP artifact.
pub fn sdk_section(reads: &SdkReads, limit: usize) -> SdkObservationsSection {
    SdkObservationsSection {
        artifact_id: reads.artifact.clone(),
        spans: reads.names.iter().map(|n| n.count).sum(),
        span_names: reads.names.len(),
        slowest_spans: reads.names.iter().take(limit).cloned().collect(),
        metric_series: reads.series_total,
        metrics: reads.series.iter().take(limit).cloned().collect(),
    }
}

/// Span names whose total time changed most, and series whose last value
/// changed, between the base artifact and the target already read.
pub async fn sdk_changes(
    qc: &QueryContext<'_>,
    target: &SdkReads,
    base: &str,
    limit: usize,
) -> Result<(Vec<SpanDelta>, Vec<MetricDelta>)> {
    let now = &target.names;
    let before: BTreeMap<String, SpanName> = span_names(qc, base)
        .await?
        .into_iter()
        .map(|n| (n.name.clone(), n))
        .collect();
    let mut spans: Vec<SpanDelta> = now
        .iter()
        .map(|n| {
            let old = before.get(&n.name);
            SpanDelta {
                name: n.name.clone(),
                base_count: old.map_or(0, |o| o.count),
                target_count: n.count,
                base_total_ns: old.map_or(0, |o| o.total_ns),
                target_total_ns: n.total_ns,
                delta_total_ns: n.total_ns - old.map_or(0, |o| o.total_ns),
            }
        })
        .filter(|d| d.delta_total_ns != 0)
        .collect();
    spans.sort_by(|a, b| {
        b.delta_total_ns
            .abs()
            .cmp(&a.delta_total_ns.abs())
            .then(a.name.cmp(&b.name))
    });
    spans.truncate(limit);
    let last = |s: &[CounterSeries]| -> BTreeMap<String, f64> {
        s.iter().map(|c| (c.series.clone(), c.last)).collect()
    };
    let (now, before) = (
        last(&target.series),
        last(&series(qc, base, READ_NAMES).await?.1),
    );
    let mut names: Vec<&String> = now.keys().chain(before.keys()).collect();
    names.sort();
    names.dedup();
    let metrics = names
        .into_iter()
        .filter(|n| now.get(*n) != before.get(*n))
        .take(limit)
        .map(|n| MetricDelta {
            series: n.clone(),
            base_last: before.get(n).copied(),
            target_last: now.get(n).copied(),
        })
        .collect();
    Ok((spans, metrics))
}
