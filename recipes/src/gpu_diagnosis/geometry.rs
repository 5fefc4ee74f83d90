//! Launch geometry per device: each kernel shape (name, grid, block,
//! registers, shared memory) with its time, blocks per SM against the
//! device's SM count, and the compute kernels that cannot fill the device
//! (fewer blocks than SMs: some SMs idle for the kernel's whole run).
//!
//! Each shape also carries its theoretical occupancy and what limits it
//! ([`super::occupancy`]) where the trace recorded the SM's resources.
//!
//! The SM count comes from the trace's device properties (Kineto
//! `deviceProperties.numSms`, Nsight `TARGET_INFO_GPU`, rocprof CUs); a
//! Kineto trace without them still carries `blocks per SM` on each kernel,
//! which is blocks / SMs, so SMs = blocks / `blocks per SM`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::device_rows::{Geometry, WorkClass, WorkRows};
use super::occupancy::{OccupancyLimiter, SmLimits};
use super::params::DiagnosisParams;
use crate::gpu_breakdown_params::DeviceKey;
use crate::kernel_family::readable_name;

/// One kernel name launched with one geometry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchShape {
    pub name: String,
    pub count: i64,
    pub total_ns: i64,
    pub mean_ns: f64,
    /// Share of the device's compute kernel time, in percent.
    pub time_pct_of_compute: f64,
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub blocks: i64,
    pub threads_per_block: i64,
    pub registers_per_thread: Option<i64>,
    pub shared_memory_bytes: Option<i64>,
    /// blocks / the device's SMs; under 1: SMs left idle.
    pub blocks_per_sm: Option<f64>,
    /// Kineto's `est. achieved occupancy %` (mean over the launches).
    pub achieved_occupancy_pct: Option<f64>,
    /// Fewer blocks than the device has SMs.
    pub underfills_device: Option<bool>,
    /// Blocks of this shape that fit on one SM at once, the warps they
    /// hold over the SM's warp slots, and the resource that stops one more
    /// (`occupancy_basis` of the device says the limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_blocks_per_sm: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical_occupancy_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_limited_by: Option<OccupancyLimiter>,
}

/// Launch geometry of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeometryDevice {
    #[serde(flatten)]
    pub key: DeviceKey,
    pub sm_count: Option<i64>,
    /// `device properties` or `kernel args (blocks / blocks per SM)`.
    pub sm_count_source: Option<String>,
    /// The SM limits theoretical occupancy is computed from, at the
    /// largest shared-memory carveout (an upper bound); absent when the
    /// trace did not record them or the device is not NVIDIA's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_basis: Option<String>,
    pub compute_kernels: i64,
    pub compute_ns: i64,
    /// Compute kernels whose geometry the trace recorded.
    pub with_geometry: i64,
    /// Compute kernels with fewer blocks than SMs, and their time.
    pub underfilled_kernels: i64,
    pub underfilled_ns: i64,
    pub underfilled_pct_of_compute: f64,
    /// The underfilling shape with the most time (whatever `kernel` says).
    pub underfilled_heaviest: Option<LaunchShape>,
    /// Distinct shapes; `shapes` holds the heaviest `limit`.
    pub shapes_total: usize,
    pub shapes: Vec<LaunchShape>,
}

#[derive(Default)]
struct ShapeTotals {
    count: i64,
    total_ns: i64,
    occupancy_sum: f64,
    occupancy_n: i64,
}

/// A device's entry in a per-device map: its own, else the one value
/// every device shares (one device in the properties, or all alike).
fn of_device<T: Copy + PartialEq>(by_device: &BTreeMap<i64, T>, device: Option<i64>) -> Option<T> {
    if let Some(v) = device.and_then(|d| by_device.get(&d)) {
        return Some(*v);
    }
    let mut values = by_device.values();
    let first = values.next()?;
    values.all(|v| v == first).then_some(*first)
}

/// SMs of a device from kernel args: the most common blocks / `blocks per SM`.
fn sms_from_args<'a>(rows: impl Iterator<Item = (&'a Geometry, f64)>) -> Option<i64> {
    let mut votes: BTreeMap<i64, i64> = BTreeMap::new();
    for (g, per_sm) in rows {
        if per_sm > 0.0 {
            let sms = (g.blocks() as f64 / per_sm).round() as i64;
            if sms > 0 {
                *votes.entry(sms).or_default() += 1;
            }
        }
    }
    votes
        .into_iter()
        .max_by_key(|(sms, n)| (*n, std::cmp::Reverse(*sms)))
        .map(|(sms, _)| sms)
}

pub fn geometry(work: &WorkRows, params: &DiagnosisParams) -> Vec<GeometryDevice> {
    let mut by_device: BTreeMap<(String, Option<i64>), Vec<usize>> = BTreeMap::new();
    for (i, r) in work.rows.iter().enumerate() {
        if r.class == WorkClass::Compute {
            by_device
                .entry((work.strings.get(r.artifact).to_owned(), r.device))
                .or_default()
                .push(i);
        }
    }
    let mut out = Vec::new();
    for ((artifact, device), rows) in by_device {
        let rows: Vec<_> = rows.iter().map(|i| &work.rows[*i]).collect();
        let facts = params.facts.get(&artifact);
        let recorded = facts.and_then(|f| of_device(&f.sm_counts, device));
        let limits: Option<SmLimits> = facts.and_then(|f| of_device(&f.sm_limits, device));
        let (sm_count, source) = match recorded {
            Some(n) => (Some(n), Some("device properties")),
            None => match sms_from_args(
                rows.iter()
                    .filter_map(|r| Some((r.geometry.as_ref()?, r.blocks_per_sm?))),
            ) {
                Some(n) => (Some(n), Some("kernel args (blocks / blocks per SM)")),
                None => (None, None),
            },
        };
        let compute_ns: i64 = rows.iter().map(|r| r.dur()).sum();
        let mut shapes: BTreeMap<(u32, Geometry), ShapeTotals> = BTreeMap::new();
        let (mut with_geometry, mut under_n, mut under_ns) = (0, 0, 0);
        for r in &rows {
            let Some(g) = r.geometry else { continue };
            with_geometry += 1;
            if sm_count.is_some_and(|sms| g.blocks() < sms) {
                under_n += 1;
                under_ns += r.dur();
            }
            let t = shapes.entry((r.name, g)).or_default();
            t.count += 1;
            t.total_ns += r.dur();
            if let Some(o) = r.occupancy_pct {
                t.occupancy_sum += o;
                t.occupancy_n += 1;
            }
        }
        let pct = |ns: i64| {
            if compute_ns > 0 {
                ns as f64 * 100.0 / compute_ns as f64
            } else {
                0.0
            }
        };
        let mut listed: Vec<LaunchShape> = shapes
            .into_iter()
            .map(|((name, g), t)| {
                let occupancy = limits.and_then(|l| {
                    l.occupancy(
                        g.threads_per_block(),
                        g.registers_per_thread,
                        g.shared_memory_bytes,
                    )
                });
                LaunchShape {
                    name: readable_name(work.strings.get(name)),
                    count: t.count,
                    total_ns: t.total_ns,
                    mean_ns: t.total_ns as f64 / t.count.max(1) as f64,
                    time_pct_of_compute: pct(t.total_ns),
                    grid: g.grid,
                    block: g.block,
                    blocks: g.blocks(),
                    threads_per_block: g.threads_per_block(),
                    registers_per_thread: g.registers_per_thread,
                    shared_memory_bytes: g.shared_memory_bytes,
                    blocks_per_sm: sm_count.map(|s| g.blocks() as f64 / s as f64),
                    achieved_occupancy_pct: (t.occupancy_n > 0)
                        .then(|| t.occupancy_sum / t.occupancy_n as f64),
                    underfills_device: sm_count.map(|s| g.blocks() < s),
                    resident_blocks_per_sm: occupancy.map(|o| o.blocks_per_sm),
                    theoretical_occupancy_pct: occupancy.map(|o| o.pct),
                    occupancy_limited_by: occupancy.map(|o| o.limited_by),
                }
            })
            .collect();
        listed.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.grid.cmp(&b.grid))
        });
        let underfilled_heaviest = listed
            .iter()
            .find(|s| s.underfills_device == Some(true))
            .cloned();
        if let Some(k) = params.kernel.as_deref() {
            listed.retain(|s| s.name.contains(k));
        }
        let shapes_total = listed.len();
        listed.truncate(params.limit);
        out.push(GeometryDevice {
            key: params.key(&artifact, device),
            sm_count,
            sm_count_source: source.map(str::to_owned),
            occupancy_basis: limits.map(|l| l.describe()),
            compute_kernels: rows.len() as i64,
            compute_ns,
            with_geometry,
            underfilled_kernels: under_n,
            underfilled_ns: under_ns,
            underfilled_pct_of_compute: pct(under_ns),
            underfilled_heaviest,
            shapes_total,
            shapes: listed,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm_count_from_args_takes_the_most_common_ratio() {
        let g = |blocks: i64| Geometry {
            grid: [blocks, 1, 1],
            block: [256, 1, 1],
            registers_per_thread: None,
            shared_memory_bytes: None,
        };
        let (a, b, c) = (g(864), g(2), g(8));
        let rows = vec![(&a, 8.0), (&b, 2.0 / 108.0), (&c, 0.074074), (&a, 0.0)];
        assert_eq!(sms_from_args(rows.into_iter()), Some(108));
    }
}
