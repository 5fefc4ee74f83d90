//! `analyze execution`: one bounded answer over what a run's test reports
//! say — its tests (pytest JUnit XML: outcomes, the slowest, the failing),
//! its coverage (coverage.py JSON: the total and the least-covered files)
//! and its import times (`python -X importtime`: the slowest modules) —
//! — and the configuration a captured run was observed in (host, git,
//! interpreter; [`crate::services::workload_capture::observations`]) and
//! what the program reported through OpenTelemetry (spans and metrics of
//! its `otlp_json` artifact; [`super::sdk_observations`]); with
//! `compare`, how each changed against another run (tests newly failing or
//! fixed, tests and modules that got slower, files whose coverage moved,
//! configuration fields that differ, span totals and metric values that
//! moved). It composes the read services (hotspots, frame
//! deltas, measurements) over the run's artifacts of those kinds; it adds
//! no query of its own.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::analyze::{HotspotsRequest, analyze_hotspots};
use super::measurements::{MeasurementsRequest, query_measurements};
use super::sdk_observations::{
    MetricDelta, SDK_OBSERVATIONS_KIND, SdkObservationsSection, SdkReads, SpanDelta, read_sdk,
    sdk_changes, sdk_section,
};
use super::views::{FrameDeltaRequest, frame_deltas};
use crate::error::{FlameoxError, Result};
use crate::runs;
use crate::services::workload_capture::observations::{
    ConfigurationChange, ConfigurationObservations, GitState, HostObservations, OBSERVATIONS_KIND,
    changes,
};
use crate::services::{EvidenceStatus, QueryContext};

/// Rows read per section before ranking (a report with more tests or
/// files is counted over these, and says so).
const READ_ROWS: usize = 1000;

/// What `analyze_execution` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutionRequest {
    /// Run id (or a unique prefix, or latest) holding test, coverage or import-time reports.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// A base run to compare with.
    #[schemars(length(min = 1, max = 200))]
    pub compare: Option<String>,
    /// Rows per section (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// One test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRow {
    pub name: String,
    pub outcome: String,
    pub duration_ns: i64,
}

/// The tests of a JUnit XML report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestsSection {
    pub artifact_id: String,
    pub tests: usize,
    /// Tests counted (at most 1000 are read).
    pub complete: bool,
    pub by_outcome: BTreeMap<String, usize>,
    pub slowest: Vec<TestRow>,
    /// Failed or errored, slowest first.
    pub failing: Vec<TestRow>,
}

/// One file's coverage (the total has no path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoveredFile {
    pub path: String,
    pub percent_covered: f64,
}

/// A coverage.py report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageSection {
    pub artifact_id: String,
    pub percent_covered: Option<f64>,
    pub files: usize,
    /// Least covered first.
    pub least_covered: Vec<CoveredFile>,
}

/// One module's import time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleRow {
    pub module: String,
    pub self_ns: i64,
    pub inclusive_ns: i64,
}

/// A `python -X importtime` listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportsSection {
    pub artifact_id: String,
    pub total_ns: i64,
    pub slowest: Vec<ModuleRow>,
}

/// A test or module whose time changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeDelta {
    pub name: String,
    pub base_ns: i64,
    pub target_ns: i64,
    pub delta_ns: i64,
}

/// A file whose coverage changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageDelta {
    pub path: String,
    pub base: Option<f64>,
    pub target: Option<f64>,
}

/// The differences from the base run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionDiff {
    pub base_run: String,
    pub newly_failing: Vec<String>,
    pub fixed: Vec<String>,
    pub slower_tests: Vec<TimeDelta>,
    pub coverage_changes: Vec<CoverageDelta>,
    pub slower_imports: Vec<TimeDelta>,
    /// Wall time, CPU time and peak RSS of both runs (captured runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceDelta>,
    /// Configuration fields that differ (host and git first, packages
    /// last), the first `limit`; both runs must have been captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configuration_changes: Vec<ConfigurationChange>,
    #[serde(default)]
    pub configuration_changes_total: usize,
    /// Span names whose total time moved most (both runs hold OTLP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub span_changes: Vec<SpanDelta>,
    /// Metric series whose last value differs (both runs hold OTLP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_changes: Vec<MetricDelta>,
}

/// What a captured run's process used (its execution receipt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourcesSection {
    pub artifact_id: String,
    pub wall_time_ns: Option<f64>,
    pub cpu_time_ns: Option<f64>,
    pub peak_rss_bytes: Option<f64>,
}

/// One resource of both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceDelta {
    /// `wall_time`, `cpu_time` or `peak_rss`.
    pub name: String,
    pub unit: String,
    pub base: f64,
    pub target: f64,
    /// target ÷ base (absent when base is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// The configuration a captured run was observed in (its `observations`
/// artifact; packages counted, not listed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigurationSection {
    pub artifact_id: String,
    pub host: HostObservations,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitState>,
    /// `CPython 3.11.7`, with the count of installed packages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<usize>,
    /// Declared variables and the inherited locale and time zone, with
    /// their values (declared win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_observed: Vec<String>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    pub run_id: String,
    pub tests: Option<TestsSection>,
    pub coverage: Option<CoverageSection>,
    pub imports: Option<ImportsSection>,
    /// Wall time, CPU time and peak RSS (absent for imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesSection>,
    /// The configuration observed when the run was captured (absent for
    /// imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<ConfigurationSection>,
    /// Spans and metrics the program reported through OpenTelemetry (an
    /// imported OTLP/JSON file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_observations: Option<SdkObservationsSection>,
    pub compare: Option<ExecutionDiff>,
    /// Reports the run does not hold, each with how to add one.
    pub missing: Vec<String>,
    /// `available` with all three reports, `partial` with some (reason
    /// `reports_missing`: `missing` says which), `unavailable` with none
    /// (reason `no_execution_reports`) — never an empty answer read as a
    /// negative one.
    pub evidence: EvidenceStatus,
}

/// The run's artifacts of the three report kinds.
struct Reports {
    run_id: String,
    junit: Option<String>,
    coverage: Option<String>,
    importtime: Option<String>,
    observations: Option<String>,
    receipt: Option<String>,
    otlp: Option<String>,
}

fn reports(qc: &QueryContext<'_>, target: &str) -> Result<Reports> {
    let run_id = runs::resolve_run_id(qc.ws, target)?;
    let run = runs::read_run(qc.ws, &run_id)?;
    let of = |kind: &str| {
        run.artifacts
            .iter()
            .find(|a| a.kind == kind)
            .map(|a| a.artifact_id.clone())
    };
    Ok(Reports {
        junit: of("junit_xml"),
        coverage: of("coverage_json"),
        importtime: of("python_importtime"),
        observations: of(OBSERVATIONS_KIND),
        receipt: of("execution_receipt"),
        otlp: of(SDK_OBSERVATIONS_KIND),
        run_id,
    })
}

/// Observations larger than this are not read (a capture writes ~10 KiB).
const MOST_OBSERVATION_BYTES: u64 = 8 * 1024 * 1024;

/// A run's configuration observations, read from the store.
fn observations_of(qc: &QueryContext<'_>, artifact: &str) -> Result<ConfigurationObservations> {
    let record = crate::store::read_artifact(qc.ws, artifact)?;
    if record.bytes > MOST_OBSERVATION_BYTES {
        return Err(FlameoxError::new(
            crate::error::ErrorCode::ArtifactTooLarge,
            format!(
                "the observations artifact {artifact} is {} bytes",
                record.bytes
            ),
        ));
    }
    crate::shared_store::ensure_payload(qc.ws, &record)?;
    let bytes = std::fs::read(crate::store::payload_path(qc.ws, &record))
        .map_err(|e| crate::error::io_error("reading observations", e))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        FlameoxError::new(
            crate::error::ErrorCode::ArtifactParseFailed,
            format!("the observations artifact {artifact} does not read: {e}"),
        )
    })
}

/// A receipt's measurements: `wall_time`, `cpu_time`, `peak_rss` → (value, unit).
async fn receipt_values(
    qc: &QueryContext<'_>,
    artifact: &str,
) -> Result<BTreeMap<String, (f64, String)>> {
    let page = query_measurements(
        qc,
        &MeasurementsRequest {
            target: Some(artifact.to_owned()),
            limit: Some(100),
            ..MeasurementsRequest::default()
        },
    )
    .await?;
    Ok(page
        .rows
        .into_iter()
        .map(|r| (r.name, (r.value, r.unit)))
        .collect())
}

fn resources_section(artifact: &str, v: &BTreeMap<String, (f64, String)>) -> ResourcesSection {
    let get = |name: &str| v.get(name).map(|(value, _)| *value);
    ResourcesSection {
        artifact_id: artifact.to_owned(),
        wall_time_ns: get("wall_time"),
        cpu_time_ns: get("cpu_time"),
        peak_rss_bytes: get("peak_rss"),
    }
}

fn configuration_section(artifact: &str, o: ConfigurationObservations) -> ConfigurationSection {
    ConfigurationSection {
        artifact_id: artifact.to_owned(),
        host: o.host,
        git: o.git,
        interpreter: o
            .interpreter
            .as_ref()
            .map(|i| format!("{} {}", i.implementation, i.version)),
        packages: o.interpreter.as_ref().map(|i| i.packages_total),
        environment: {
            let mut shown = o.environment.locale;
            shown.extend(o.environment.declared);
            shown
        },
        not_observed: o.not_observed,
    }
}

/// Every test of a JUnit artifact (at most [`READ_ROWS`]), slowest first,
/// and whether that is all of them.
async fn all_tests(qc: &QueryContext<'_>, artifact: &str) -> Result<(Vec<TestRow>, bool)> {
    let page = analyze_hotspots(
        qc,
        &HotspotsRequest {
            target: artifact.to_owned(),
            limit: Some(READ_ROWS),
            ..HotspotsRequest::default()
        },
    )
    .await?;
    let tests = page
        .rows
        .into_iter()
        .filter(|r| r.category.as_deref() != Some("testsuite"))
        .map(|r| TestRow {
            name: r.function,
            outcome: r.category.unwrap_or_default(),
            duration_ns: r.self_value,
        })
        .collect();
    Ok((tests, !page.truncated))
}

fn tests_section(artifact: &str, tests: &[TestRow], complete: bool, limit: usize) -> TestsSection {
    let mut by_outcome = BTreeMap::new();
    for t in tests {
        *by_outcome.entry(t.outcome.clone()).or_insert(0) += 1;
    }
    let failing = tests
        .iter()
        .filter(|t| t.outcome == "failed" || t.outcome == "error")
        .take(limit)
        .cloned()
        .collect();
    TestsSection {
        artifact_id: artifact.to_owned(),
        tests: tests.len(),
        complete,
        by_outcome,
        slowest: tests.iter().take(limit).cloned().collect(),
        failing,
    }
}

/// `path` → percent covered (`""` for the total).
async fn coverage_by_path(qc: &QueryContext<'_>, artifact: &str) -> Result<BTreeMap<String, f64>> {
    let page = query_measurements(
        qc,
        &MeasurementsRequest {
            target: Some(artifact.to_owned()),
            name_prefix: Some("coverage.percent_covered".to_owned()),
            limit: Some(READ_ROWS),
            ..MeasurementsRequest::default()
        },
    )
    .await?;
    Ok(page
        .rows
        .into_iter()
        .map(|r| {
            let path = r
                .parameters
                .as_ref()
                .and_then(|p| p["path"].as_str())
                .unwrap_or("")
                .to_owned();
            (path, r.value)
        })
        .collect())
}

fn coverage_section(
    artifact: &str,
    by_path: &BTreeMap<String, f64>,
    limit: usize,
) -> CoverageSection {
    let mut files: Vec<CoveredFile> = by_path
        .iter()
        .filter(|(path, _)| !path.is_empty())
        .map(|(path, pct)| CoveredFile {
            path: path.clone(),
            percent_covered: *pct,
        })
        .collect();
    files.sort_by(|a, b| a.percent_covered.total_cmp(&b.percent_covered));
    CoverageSection {
        artifact_id: artifact.to_owned(),
        percent_covered: by_path.get("").copied(),
        files: files.len(),
        least_covered: files.into_iter().take(limit).collect(),
    }
}

async fn imports_section(
    qc: &QueryContext<'_>,
    artifact: &str,
    limit: usize,
) -> Result<ImportsSection> {
    let page = analyze_hotspots(
        qc,
        &HotspotsRequest {
            target: artifact.to_owned(),
            metric: Some(flameox_extractors::importtime::IMPORT_METRIC.to_owned()),
            limit: Some(limit),
            ..HotspotsRequest::default()
        },
    )
    .await?;
    Ok(ImportsSection {
        artifact_id: artifact.to_owned(),
        total_ns: page.total_self,
        slowest: page
            .rows
            .into_iter()
            .map(|r| ModuleRow {
                module: r.function,
                self_ns: r.self_value,
                inclusive_ns: r.inclusive_value,
            })
            .collect(),
    })
}

/// What was read of the target run, kept for its comparison.
struct TargetReads {
    tests: Option<Vec<TestRow>>,
    coverage: Option<BTreeMap<String, f64>>,
    sdk: Option<SdkReads>,
}

async fn diff(
    qc: &QueryContext<'_>,
    target: &Reports,
    read: &TargetReads,
    base: &Reports,
    limit: usize,
) -> Result<ExecutionDiff> {
    let mut out = ExecutionDiff {
        base_run: base.run_id.clone(),
        newly_failing: Vec::new(),
        fixed: Vec::new(),
        slower_tests: Vec::new(),
        coverage_changes: Vec::new(),
        slower_imports: Vec::new(),
        resources: Vec::new(),
        configuration_changes: Vec::new(),
        configuration_changes_total: 0,
        span_changes: Vec::new(),
        metric_changes: Vec::new(),
    };
    if let (Some(now), Some(b)) = (&read.tests, &base.junit) {
        let (before, _) = all_tests(qc, b).await?;
        let before: BTreeMap<&str, &TestRow> =
            before.iter().map(|r| (r.name.as_str(), r)).collect();
        let bad = |o: &str| o == "failed" || o == "error";
        for test in now {
            match before.get(test.name.as_str()) {
                Some(old) => {
                    if bad(&test.outcome) && !bad(&old.outcome) {
                        out.newly_failing.push(test.name.clone());
                    }
                    if !bad(&test.outcome) && bad(&old.outcome) {
                        out.fixed.push(test.name.clone());
                    }
                    if test.duration_ns > old.duration_ns {
                        out.slower_tests.push(TimeDelta {
                            name: test.name.clone(),
                            base_ns: old.duration_ns,
                            target_ns: test.duration_ns,
                            delta_ns: test.duration_ns - old.duration_ns,
                        });
                    }
                }
                None if bad(&test.outcome) => out.newly_failing.push(test.name.clone()),
                None => {}
            }
        }
        out.slower_tests
            .sort_by_key(|d| std::cmp::Reverse(d.delta_ns));
        out.slower_tests.truncate(limit);
        out.newly_failing.truncate(limit);
        out.fixed.truncate(limit);
    }
    if let (Some(now), Some(b)) = (&read.coverage, &base.coverage) {
        let before = coverage_by_path(qc, b).await?;
        let mut paths: Vec<&String> = now.keys().chain(before.keys()).collect();
        paths.sort();
        paths.dedup();
        let mut changes: Vec<CoverageDelta> = paths
            .into_iter()
            .filter(|p| now.get(*p) != before.get(*p))
            .map(|p| CoverageDelta {
                path: if p.is_empty() {
                    "(total)".to_owned()
                } else {
                    p.clone()
                },
                base: before.get(p).copied(),
                target: now.get(p).copied(),
            })
            .collect();
        let size = |c: &CoverageDelta| (c.target.unwrap_or(0.0) - c.base.unwrap_or(0.0)).abs();
        changes.sort_by(|a, b| size(b).total_cmp(&size(a)));
        changes.truncate(limit);
        out.coverage_changes = changes;
    }
    if let (Some(t), Some(b)) = (&target.importtime, &base.importtime) {
        let deltas = frame_deltas(
            qc,
            &FrameDeltaRequest {
                target: t.clone(),
                base: b.clone(),
                metric: Some(flameox_extractors::importtime::IMPORT_METRIC.to_owned()),
                limit: Some(limit),
                by_line: false,
            },
        )
        .await?;
        out.slower_imports = deltas
            .answer
            .rows
            .into_iter()
            .filter(|r| r.delta_self > 0)
            .map(|r| TimeDelta {
                name: r.function,
                base_ns: r.base_self,
                target_ns: r.target_self,
                delta_ns: r.delta_self,
            })
            .collect();
    }
    if let (Some(t), Some(b)) = (&target.receipt, &base.receipt) {
        let (now, before) = (receipt_values(qc, t).await?, receipt_values(qc, b).await?);
        for name in ["wall_time", "cpu_time", "peak_rss"] {
            if let (Some((target, unit)), Some((base, _))) = (now.get(name), before.get(name)) {
                out.resources.push(ResourceDelta {
                    name: name.to_owned(),
                    unit: unit.clone(),
                    base: *base,
                    target: *target,
                    ratio: (*base > 0.0).then(|| target / base),
                });
            }
        }
    }
    if let (Some(t), Some(b)) = (&target.observations, &base.observations) {
        let mut changes = changes(&observations_of(qc, b)?, &observations_of(qc, t)?);
        out.configuration_changes_total = changes.len();
        changes.truncate(limit);
        out.configuration_changes = changes;
    }
    if let (Some(t), Some(b)) = (&read.sdk, &base.otlp) {
        (out.span_changes, out.metric_changes) = sdk_changes(qc, t, b, limit).await?;
    }
    Ok(out)
}

/// `analyze_execution`: the run's tests, coverage and import times, and
/// with `compare` their changes against a base run.
pub async fn analyze_execution(
    qc: &QueryContext<'_>,
    req: &ExecutionRequest,
) -> Result<ExecutionResult> {
    let limit = req.limit.unwrap_or(10);
    if !(1..=READ_ROWS).contains(&limit) {
        return Err(FlameoxError::invalid_argument("limit", "1..=1000"));
    }
    let target = reports(qc, &req.target)?;
    let mut missing = Vec::new();
    let mut read = TargetReads {
        tests: None,
        coverage: None,
        sdk: None,
    };
    let tests = match &target.junit {
        Some(a) => {
            let (all, complete) = all_tests(qc, a).await?;
            let section = tests_section(a, &all, complete, limit);
            read.tests = Some(all);
            Some(section)
        }
        None => {
            missing.push(
                "tests: import a JUnit XML report (pytest --junitxml=FILE) into this run"
                    .to_owned(),
            );
            None
        }
    };
    let coverage = match &target.coverage {
        Some(a) => {
            let by_path = coverage_by_path(qc, a).await?;
            let section = coverage_section(a, &by_path, limit);
            read.coverage = Some(by_path);
            Some(section)
        }
        None => {
            missing.push(
                "coverage: import a coverage.py JSON report (coverage json) into this run"
                    .to_owned(),
            );
            None
        }
    };
    let imports = match &target.importtime {
        Some(a) => Some(imports_section(qc, a, limit).await?),
        None => {
            missing.push(
                "imports: import a `python -X importtime` listing (its stderr) into this run"
                    .to_owned(),
            );
            None
        }
    };
    let resources = match &target.receipt {
        Some(a) => Some(resources_section(a, &receipt_values(qc, a).await?)),
        None => None,
    };
    let configuration = match &target.observations {
        Some(a) => Some(configuration_section(a, observations_of(qc, a)?)),
        None => None,
    };
    if let Some(a) = &target.otlp {
        read.sdk = Some(read_sdk(qc, a).await?);
    }
    let sdk_observations = read.sdk.as_ref().map(|r| sdk_section(r, limit));
    let compare = match &req.compare {
        Some(base) => Some(diff(qc, &target, &read, &reports(qc, base)?, limit).await?),
        None => None,
    };
    let evidence = match (missing.len(), &configuration, &sdk_observations) {
        (0, _, _) => EvidenceStatus::available(),
        (3, None, None) => EvidenceStatus::new("unavailable", "no_execution_reports"),
        _ => EvidenceStatus::new("partial", "reports_missing"),
    };
    Ok(ExecutionResult {
        run_id: target.run_id,
        tests,
        coverage,
        imports,
        resources,
        configuration,
        sdk_observations,
        compare,
        missing,
        evidence,
    })
}
