//! MFU section: model-FLOPs utilization per artifact (rank). FLOPs come
//! from the PyTorch operator calls that carry them ([`super::flops`]);
//! the peak from the device's name ([`super::peaks`], stated in the
//! answer as the assumption it is). Two figures, each naming its span:
//! over the span (the phase, else the profiler steps, else the trace) — FLOPs ÷ (span × devices × peak) — and over the device
//! time of the kernels those calls launched — how fast the matrix work ran
//! while it ran. A call nested in another counted call (the
//! `_flash_attention_forward` under `scaled_dot_product_attention`) is
//! not counted again; its kernels belong to the outer call.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use super::device_rows::{WorkClass, WorkRows};
use super::flops::FlopSource;
use super::mfu_calls::{Call, outermost, read_calls, read_launches, read_steps};
use super::params::DiagnosisParams;
use super::peaks::{self, PeakUsed};
use crate::common::{ArtifactScope, RecipeResult};
use crate::device_pass::Interner;
use crate::time_accounting::{NamedSpan, SpanName};

/// Artifacts an answer lists (the lowest MFU first).
const ARTIFACTS_SHOWN: usize = 4;

/// FLOPs of one element type and the peak they are measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DtypeFlop {
    pub dtype: String,
    pub flop: f64,
    /// None: no peak for this type on this device (its FLOPs are left out
    /// of the MFU figures).
    pub peak: Option<PeakUsed>,
}

/// One operator name's counted calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MfuOp {
    pub name: String,
    pub dtype: Option<String>,
    pub calls: u64,
    pub flop: f64,
    /// Device time of the kernels its calls launched.
    pub kernel_ns: i64,
    /// `flop / kernel_ns`, in TFLOP/s.
    pub tflop_per_s_in_kernels: Option<f64>,
    /// That rate over the peak of its type.
    pub pct_of_peak_in_kernels: Option<f64>,
}

/// One artifact's MFU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MfuArtifact {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
    /// The device the kernels ran on, as the trace names it.
    pub device_name: Option<String>,
    /// Devices with kernels in this artifact (the span counts once each).
    pub devices: usize,
    /// The span the MFU is of.
    pub span: NamedSpan,
    /// `trace` (the profiler's `flops`), `shapes` (computed from input
    /// dims) or `trace_and_shapes`.
    pub flop_source: Option<String>,
    /// Calls counted, and calls of the listed operators whose FLOPs the
    /// trace does not give (no shapes recorded).
    pub calls_counted: u64,
    pub calls_without_flop: u64,
    pub flop: f64,
    pub by_dtype: Vec<DtypeFlop>,
    /// FLOPs over the span, in TFLOP/s.
    pub tflop_per_s_over_span: f64,
    /// FLOPs with a peak ÷ (span × devices × peak), in % — the MFU.
    pub mfu_pct_over_span: Option<f64>,
    /// Device time of the kernels the counted calls launched.
    pub kernel_ns: i64,
    /// FLOPs with a peak ÷ (their kernels' time × peak), in %.
    pub pct_of_peak_in_kernels: Option<f64>,
    /// Why there is no MFU (or only part of the FLOPs have a peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Operators by FLOPs (at most `limit`).
    pub ops: Vec<MfuOp>,
    pub ops_total: usize,
}

/// Artifacts with no FLOP counts, said once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WithoutFlop {
    pub artifacts: usize,
    /// The first one, its device and its operator calls without shapes.
    pub artifact_id: String,
    pub device_name: Option<String>,
    pub calls_without_flop: u64,
    pub caveat: Option<String>,
}

/// The section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mfu {
    /// Artifacts with FLOP counts, lowest MFU first (at most 4).
    pub artifacts: Vec<MfuArtifact>,
    pub artifacts_total: usize,
    /// The rest, and why they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_flop: Option<WithoutFlop>,
    /// min, median and max MFU over the artifacts that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu_pct_spread: Option<[f64; 3]>,
}

/// The section over `scope`.
pub async fn mfu(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    work: &WorkRows,
    params: &DiagnosisParams,
) -> RecipeResult<Mfu> {
    let mut strings = Interner::default();
    let calls = outermost(read_calls(ctx, scope, params.window, &mut strings).await?);
    let launches = read_launches(ctx, scope, &calls, &mut strings).await?;
    let steps = read_steps(ctx, scope, params.window).await?;
    // Kernel time per (artifact, correlation), and each artifact's devices
    // and active span.
    let mut kernel_ns: HashMap<(&str, i64), i64> = HashMap::new();
    let mut devices: BTreeMap<&str, BTreeMap<Option<i64>, i64>> = BTreeMap::new();
    let mut active: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for r in &work.rows {
        let artifact = work.strings.get(r.artifact);
        let a = active.entry(artifact).or_insert((r.ts, r.end));
        *a = (a.0.min(r.ts), a.1.max(r.end));
        if matches!(r.class, WorkClass::Compute | WorkClass::Communication) {
            *devices
                .entry(artifact)
                .or_default()
                .entry(r.device)
                .or_default() += r.dur();
            if let Some(c) = r.correlation {
                *kernel_ns.entry((artifact, c)).or_default() += r.dur();
            }
        }
    }
    let mut out = Vec::new();
    for artifact_id in &scope.artifact_ids {
        let artifact = artifact_id.as_str();
        let facts = params.facts.get(artifact);
        let trace = facts.and_then(|f| f.trace_span);
        let span = match (
            params.window,
            steps.get(artifact),
            trace,
            active.get(artifact),
        ) {
            (Some((a, b)), ..) => NamedSpan::new(SpanName::Phase, None, a, b),
            (None, Some((a, b, label)), ..) => {
                NamedSpan::new(SpanName::Steps, Some(label.clone()), *a, *b)
            }
            (None, None, Some((a, b)), _) => NamedSpan::new(SpanName::Trace, None, a, b),
            (None, None, None, Some((a, b))) => {
                NamedSpan::new(SpanName::DeviceActive, None, *a, *b)
            }
            (None, None, None, None) => continue,
        };
        let on = devices.get(artifact);
        let device = on
            .and_then(|d| d.iter().max_by_key(|(_, ns)| **ns))
            .and_then(|(d, _)| *d);
        let device_name = device.and_then(|d| facts.and_then(|f| f.device_names.get(&d)).cloned());
        let sms = device.and_then(|d| facts.and_then(|f| f.sm_counts.get(&d)).copied());
        let mine = calls.iter().filter(|c| {
            strings.get(c.artifact) == artifact && c.ts >= span.start_ns && c.ts < span.end_ns
        });
        let launched = |c: &Call| -> i64 {
            let Some(list) = launches.get(&(c.artifact, c.track)) else {
                return 0;
            };
            let from = list.partition_point(|l| l.0 < c.ts);
            list[from..]
                .iter()
                .take_while(|l| l.0 <= c.end)
                .map(|l| kernel_ns.get(&(artifact, l.1)).copied().unwrap_or(0))
                .sum()
        };
        let mut a = Tally::default();
        for c in mine {
            a.add(c, strings.get(c.name), launched(c));
        }
        out.push(a.finish(
            artifact_id,
            params.rank(artifact),
            (device_name, sms, on.map_or(0, BTreeMap::len)),
            span,
            params.limit,
        ));
    }
    let total = out.len();
    let (out, none): (Vec<MfuArtifact>, Vec<MfuArtifact>) =
        out.into_iter().partition(|a| a.flop_source.is_some());
    let without_flop = none.first().map(|a| WithoutFlop {
        artifacts: none.len(),
        artifact_id: a.artifact_id.clone(),
        device_name: a.device_name.clone(),
        calls_without_flop: a.calls_without_flop,
        caveat: a.caveat.clone(),
    });
    let mut out = out;
    let mut with: Vec<f64> = out.iter().filter_map(|a| a.mfu_pct_over_span).collect();
    with.sort_by(f64::total_cmp);
    let spread = (with.len() > 1).then(|| [with[0], with[with.len() / 2], with[with.len() - 1]]);
    out.sort_by(|x, y| {
        let key = |a: &MfuArtifact| a.mfu_pct_over_span.unwrap_or(f64::INFINITY);
        key(x).total_cmp(&key(y)).then_with(|| x.rank.cmp(&y.rank))
    });
    out.truncate(ARTIFACTS_SHOWN);
    Ok(Mfu {
        artifacts: out,
        artifacts_total: total,
        without_flop,
        mfu_pct_spread: spread,
    })
}

/// Per operator name: (dtype counts, calls, flop, kernel ns).
type OpTally = (BTreeMap<String, u64>, u64, f64, i64);

/// One artifact's calls added up.
#[derive(Default)]
struct Tally {
    ops: BTreeMap<String, OpTally>,
    by_dtype: BTreeMap<String, f64>,
    sources: std::collections::BTreeSet<FlopSource>,
    counted: u64,
    without: u64,
    flop: f64,
    kernel_ns: i64,
}

impl Tally {
    fn add(&mut self, c: &Call, name: &str, kernel_ns: i64) {
        let Some((flop, source)) = c.flop else {
            self.without += 1;
            return;
        };
        let dtype = c.dtype.clone().unwrap_or_else(|| "unknown".to_owned());
        let op = self.ops.entry(name.to_owned()).or_default();
        *op.0.entry(dtype.clone()).or_default() += 1;
        op.1 += 1;
        op.2 += flop;
        op.3 += kernel_ns;
        *self.by_dtype.entry(dtype).or_default() += flop;
        self.sources.insert(source);
        self.counted += 1;
        self.flop += flop;
        self.kernel_ns += kernel_ns;
    }

    fn finish(
        self,
        artifact_id: &str,
        rank: Option<i64>,
        (device_name, sms, devices): (Option<String>, Option<i64>, usize),
        span: NamedSpan,
        limit: usize,
    ) -> MfuArtifact {
        let peak_of = |dtype: &str| peaks::peak(device_name.as_deref()?, sms, dtype);
        let by_dtype: Vec<DtypeFlop> = self
            .by_dtype
            .iter()
            .map(|(dtype, flop)| DtypeFlop {
                dtype: dtype.clone(),
                flop: *flop,
                peak: peak_of(dtype),
            })
            .collect();
        // Seconds the FLOPs with a peak would take at that peak.
        let at_peak: f64 = by_dtype
            .iter()
            .filter_map(|d| d.peak.as_ref().map(|p| d.flop / (p.tflops * 1e12)))
            .sum();
        let peaked = by_dtype.iter().any(|d| d.peak.is_some());
        let span_s = span.dur_ns as f64 / 1e9;
        let pct =
            |seconds: f64| (peaked && seconds > 0.0).then(|| round2(at_peak * 100.0 / seconds));
        let caveat = caveat(&self, &by_dtype, device_name.as_deref());
        let mut ops: Vec<MfuOp> = self
            .ops
            .into_iter()
            .map(|(name, (dtypes, calls, flop, kernel_ns))| {
                let dtype = dtypes.into_iter().max_by_key(|(_, n)| *n).map(|(d, _)| d);
                let rate = (kernel_ns > 0).then(|| flop / (kernel_ns as f64 / 1e9) / 1e12);
                let peak = dtype.as_deref().and_then(peak_of);
                MfuOp {
                    pct_of_peak_in_kernels: rate
                        .zip(peak)
                        .map(|(r, p)| round2(r * 100.0 / p.tflops)),
                    tflop_per_s_in_kernels: rate.map(round2),
                    name,
                    dtype,
                    calls,
                    flop,
                    kernel_ns,
                }
            })
            .collect();
        ops.sort_by(|a, b| b.flop.total_cmp(&a.flop).then_with(|| a.name.cmp(&b.name)));
        let ops_total = ops.len();
        ops.truncate(limit);
        MfuArtifact {
            artifact_id: artifact_id.to_owned(),
            rank,
            device_name,
            devices,
            flop_source: match (
                self.sources.contains(&FlopSource::Trace),
                self.sources.contains(&FlopSource::Shapes),
            ) {
                (true, true) => Some("trace_and_shapes".to_owned()),
                (true, false) => Some("trace".to_owned()),
                (false, true) => Some("shapes".to_owned()),
                (false, false) => None,
            },
            calls_counted: self.counted,
            calls_without_flop: self.without,
            flop: self.flop,
            by_dtype,
            tflop_per_s_over_span: if span_s > 0.0 {
                round2(self.flop / span_s / 1e12)
            } else {
                0.0
            },
            mfu_pct_over_span: pct(span_s * devices.max(1) as f64),
            kernel_ns: self.kernel_ns,
            pct_of_peak_in_kernels: pct(self.kernel_ns as f64 / 1e9),
            span,
            caveat,
            ops,
            ops_total,
        }
    }
}

/// Why the MFU is missing or partial, in words.
fn caveat(t: &Tally, by_dtype: &[DtypeFlop], device: Option<&str>) -> Option<String> {
    if t.counted == 0 && t.without == 0 {
        return Some(
            "no matrix, attention or convolution operator calls in the span (the MFU counts PyTorch operators; profile with record_shapes=True)".to_owned(),
        );
    }
    if t.counted == 0 {
        return Some(format!(
            "no FLOP counts: {} calls of matrix, attention or convolution operators carry no input shapes; profile with record_shapes=True (or with_flops=True)",
            t.without
        ));
    }
    let missing: Vec<&str> = by_dtype
        .iter()
        .filter(|d| d.peak.is_none())
        .map(|d| d.dtype.as_str())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let types = missing.join(", ");
    Some(match device {
        Some(n) if !n.is_empty() => format!(
            "no {types} peak for device {n:?} in the peak table (recipes/src/gpu_diagnosis/peaks.rs); those FLOPs are left out of the MFU"
        ),
        _ => format!(
            "no {types} peak: the trace does not name its device; those FLOPs are left out of the MFU"
        ),
    })
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
