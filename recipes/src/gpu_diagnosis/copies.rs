//! Copies and the host calls that wait for the device: per device, copies
//! by direction and memory kinds (pageable host memory makes the driver
//! stage through a pinned buffer and serializes the copy with the host)
//! with achieved GB/s; per artifact, the host's synchronizing calls
//! (device, stream and event synchronize; synchronous `cudaMemcpy`) against
//! its kernel launches — one synchronize per launch keeps the device from
//! ever running ahead of the host.

use std::collections::BTreeMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{SessionContext, cast};
use serde::{Deserialize, Serialize};

use super::device_rows::{WorkClass, WorkRows, copy_kinds};
use super::params::DiagnosisParams;
use crate::accelerator::{DIRECT_LAUNCHES, host_calls_named};
use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};
use crate::gpu_breakdown_params::DeviceKey;

/// Host calls that block until device work finishes.
pub const SYNC_CALLS: &[&str] = &[
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
];

/// Copy calls that return only when the copy is done.
pub const SYNCHRONOUS_COPIES: &[&str] = &[
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "hipMemcpy",
];

/// Copies of one direction and pair of memory kinds on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyRow {
    #[serde(flatten)]
    pub key: DeviceKey,
    /// `H2D`, `D2H`, `D2D`, `P2P`, `H2H` or `other`.
    pub direction: String,
    /// Memory kinds from the copy's name (`Pageable`, `Pinned`, `Device`…).
    pub src_kind: Option<String>,
    pub dst_kind: Option<String>,
    pub count: i64,
    pub bytes: i64,
    pub time_ns: i64,
    /// bytes / time (GB/s); null without bytes or time.
    pub gb_per_s: Option<f64>,
    /// Host↔device copies: the link they cross (from the device's name,
    /// an assumption stated) and the rate's share of it, in %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<super::peaks::LinkUsed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_link: Option<f64>,
}

/// One host call name that waits for the device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallTotal {
    pub name: String,
    pub count: i64,
    pub time_ns: i64,
}

/// An artifact's synchronizing host calls against its kernel launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostWaits {
    pub rank: Option<i64>,
    pub artifact_id: String,
    pub kernel_launches: i64,
    pub sync_calls: i64,
    pub sync_ns: i64,
    /// sync_calls / kernel_launches; null without launches.
    pub syncs_per_launch: Option<f64>,
    pub synchronous_copies: i64,
    pub synchronous_copy_ns: i64,
    /// Per name, most time first.
    pub calls: Vec<CallTotal>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Copies {
    /// Most time first.
    pub rows: Vec<CopyRow>,
    pub rows_total: usize,
    /// Copies from or to pageable host memory, over the scope.
    pub pageable_copies: i64,
    pub pageable_bytes: i64,
    pub pageable_ns: i64,
    pub host_waits: Vec<HostWaits>,
}

pub async fn copies(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    work: &WorkRows,
    params: &DiagnosisParams,
) -> RecipeResult<Copies> {
    type Key = (
        String,
        Option<i64>,
        &'static str,
        Option<String>,
        Option<String>,
    );
    let mut groups: BTreeMap<Key, (i64, i64, i64, i64)> = BTreeMap::new();
    let (mut pageable_copies, mut pageable_bytes, mut pageable_ns) = (0, 0i64, 0);
    for r in work.rows.iter().filter(|r| r.class == WorkClass::Memcpy) {
        let (direction, src, dst) = copy_kinds(work.strings.get(r.name));
        if src == Some("Pageable") || dst == Some("Pageable") {
            pageable_copies += 1;
            pageable_bytes = pageable_bytes.saturating_add(r.bytes.unwrap_or(0));
            pageable_ns += r.dur();
        }
        let g = groups
            .entry((
                work.strings.get(r.artifact).to_owned(),
                r.device,
                direction,
                src.map(str::to_owned),
                dst.map(str::to_owned),
            ))
            .or_default();
        g.0 += 1;
        g.1 = g.1.saturating_add(r.bytes.unwrap_or(0));
        g.2 += r.dur();
        // Time of the copies with bytes: the rate's denominator.
        if r.bytes.is_some() {
            g.3 += r.dur();
        }
    }
    let rows_total = groups.len();
    let mut rows: Vec<CopyRow> = groups
        .into_iter()
        .map(
            |((artifact, device, direction, src, dst), (n, bytes, time, timed))| {
                let gb_per_s = (timed > 0 && bytes > 0).then(|| bytes as f64 / timed as f64);
                let facts = params.facts.get(&artifact);
                let link = (matches!(direction, "H2D" | "D2H"))
                    .then(|| {
                        let f = facts?;
                        let name = f.device_names.get(&device?)?;
                        super::peaks::host_link(name, f.sm_counts.get(&device?).copied())
                    })
                    .flatten();
                CopyRow {
                    key: params.key(&artifact, device),
                    direction: direction.to_owned(),
                    src_kind: src,
                    dst_kind: dst,
                    count: n,
                    bytes,
                    time_ns: time,
                    pct_of_link: gb_per_s
                        .zip(link.as_ref())
                        .map(|(r, l)| (r * 10_000.0 / l.gb_per_s).round() / 100.0),
                    gb_per_s,
                    link,
                }
            },
        )
        .collect();
    rows.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then_with(|| a.key.cmp(&b.key)));
    rows.truncate(params.limit.max(1) * params.facts.len().clamp(1, 4));
    Ok(Copies {
        rows,
        rows_total,
        pageable_copies,
        pageable_bytes,
        pageable_ns,
        host_waits: host_waits(ctx, scope, params).await?,
    })
}

/// The base name of a versioned Nsight call (`cudaMemcpy_v3020`).
fn base_name(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((base, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

async fn host_waits(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &DiagnosisParams,
) -> RecipeResult<Vec<HostWaits>> {
    let names: Vec<&str> = SYNC_CALLS
        .iter()
        .chain(SYNCHRONOUS_COPIES)
        .chain(DIRECT_LAUNCHES)
        .copied()
        .collect();
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(host_calls_named(&names))
                .and(col("dur_ns").gt_eq(lit(0i64))),
        )?
        .aggregate(
            vec![
                cast(col("artifact_id"), DataType::Utf8).alias("artifact"),
                cast(col("name"), DataType::Utf8).alias("call"),
            ],
            vec![count(lit(1)).alias("n"), sum(col("dur_ns")).alias("time")],
        )?;
    let mut by_artifact: BTreeMap<String, HostWaits> = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let artifact = string_at(column(&batch, "artifact")?, i).unwrap_or_default();
            let call = string_at(column(&batch, "call")?, i).unwrap_or_default();
            let n = i64_at(column(&batch, "n")?, i).unwrap_or(0);
            let time = i64_at(column(&batch, "time")?, i).unwrap_or(0);
            let w = by_artifact
                .entry(artifact.clone())
                .or_insert_with(|| HostWaits {
                    rank: params.rank(&artifact),
                    artifact_id: artifact.clone(),
                    kernel_launches: 0,
                    sync_calls: 0,
                    sync_ns: 0,
                    syncs_per_launch: None,
                    synchronous_copies: 0,
                    synchronous_copy_ns: 0,
                    calls: Vec::new(),
                });
            let base = base_name(&call);
            if DIRECT_LAUNCHES.contains(&base) {
                w.kernel_launches += n;
                continue;
            }
            if SYNC_CALLS.contains(&base) {
                w.sync_calls += n;
                w.sync_ns += time;
            } else {
                w.synchronous_copies += n;
                w.synchronous_copy_ns += time;
            }
            match w.calls.iter_mut().find(|c| c.name == base) {
                Some(c) => {
                    c.count += n;
                    c.time_ns += time;
                }
                None => w.calls.push(CallTotal {
                    name: base.to_owned(),
                    count: n,
                    time_ns: time,
                }),
            }
        }
    }
    let mut out: Vec<HostWaits> = by_artifact.into_values().collect();
    for w in &mut out {
        w.syncs_per_launch =
            (w.kernel_launches > 0).then(|| w.sync_calls as f64 / w.kernel_launches as f64);
        w.calls
            .sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then_with(|| a.name.cmp(&b.name)));
    }
    // Most waiting first; a 1,024-rank job lists `limit` of them.
    out.sort_by(|a, b| {
        (b.sync_ns + b.synchronous_copy_ns)
            .cmp(&(a.sync_ns + a.synchronous_copy_ns))
            .then_with(|| a.artifact_id.cmp(&b.artifact_id))
    });
    out.truncate(params.limit.max(1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_names_lose_their_version_only() {
        assert_eq!(base_name("cudaMemcpy_v3020"), "cudaMemcpy");
        assert_eq!(base_name("cudaMemcpy"), "cudaMemcpy");
        assert_eq!(base_name("my_var"), "my_var");
    }
}
