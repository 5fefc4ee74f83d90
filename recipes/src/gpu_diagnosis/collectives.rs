//! Collectives (NCCL/RCCL kernels): per artifact and operation, count,
//! message size, time, algorithm and bus bandwidth (nccl-tests'
//! definitions), and the time no compute kernel hid (exposed). Across
//! ranks, the n-th instance of one operation in one process group is the
//! same collective on every rank: its latest start is when the last rank
//! arrived, so each rank waited `last arrival − own start` inside its
//! kernel, and `end − last arrival` is the transfer itself.
//!
//! The operation is PyTorch's `Collective name` arg when the kernel has it,
//! else read from the kernel name (`ncclKernel_AllReduce_RING_LL_Sum_float`,
//! `ncclDevKernel_AllGather_RING_LL`). Bytes need the args (elements ×
//! dtype size); a trace without them gets counts and times only. MPI
//! calls are added beside them ([`super::mpi_calls`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::device_rows::{WorkClass, WorkRows};
use super::params::DiagnosisParams;
use super::params::median_i64;
use super::unions::UnionsByDevice;
use crate::time_accounting::intervals::covered_in;

/// A collective's operation and message, as one rank saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Index into `WorkRows::rows`.
    pub row: usize,
    pub op: String,
    pub process_group: String,
    /// Bytes the algorithm moves (nccl-tests' S), when the args say.
    pub bytes: Option<i64>,
    pub group_size: Option<i64>,
    pub dtype: Option<String>,
    pub from_args: bool,
}

/// One collective matched on several ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    pub op: String,
    /// (artifact string id, row index), one per rank that ran it.
    pub members: Vec<(u32, usize)>,
    pub last_arrival: i64,
    /// The rank that arrived last (its artifact string id).
    pub last: u32,
    /// Median start of the members.
    pub median_arrival: i64,
    pub end_spread_ns: i64,
}

/// Every collective instance per artifact, and those matched across ranks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CollectiveInstances {
    pub per_artifact: BTreeMap<u32, Vec<Instance>>,
    pub matched: Vec<Matched>,
}

/// Bytes per element of PyTorch's (and NCCL's) dtype names.
pub fn dtype_bytes(dtype: &str) -> Option<i64> {
    let d = dtype.to_ascii_lowercase();
    Some(match d.as_str() {
        "float" | "float32" | "f32" | "int" | "int32" | "uint32" | "i32" | "u32" => 4,
        "double" | "float64" | "f64" | "long" | "int64" | "uint64" | "i64" | "u64" => 8,
        "half" | "float16" | "bfloat16" | "f16" | "bf16" | "short" | "int16" => 2,
        "byte" | "char" | "bool" | "int8" | "uint8" | "i8" | "u8" => 1,
        _ if d.starts_with("float8") || d.starts_with("f8") => 1,
        _ => return None,
    })
}

/// `allreduce` / `AllReduce` / `all_reduce` → `allreduce`.
fn canonical(op: &str) -> String {
    op.trim_start_matches('_')
        .trim_end_matches("_base")
        .trim_end_matches("_into_tensor")
        .replace('_', "")
        .to_ascii_lowercase()
}

/// nccl-tests' bus bandwidth factor for `op` over `n` ranks.
pub fn bus_factor(op: &str, n: i64) -> Option<f64> {
    if n < 1 {
        return None;
    }
    let n = n as f64;
    let c = canonical(op);
    Some(if c.contains("allreduce") {
        2.0 * (n - 1.0) / n
    } else if c.contains("allgather") || c.contains("reducescatter") || c.contains("alltoall") {
        (n - 1.0) / n
    } else if c.contains("broadcast") || c.contains("reduce") || c.contains("sendrecv") {
        1.0
    } else {
        return None;
    })
}

/// The operation a kernel name encodes: `ncclKernel_AllReduce_RING_LL_Sum_float`
/// → `AllReduce`, `ncclDevKernel_SendRecv(…)` → `SendRecv`.
pub fn op_from_kernel(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name);
    for prefix in [
        "ncclDevKernel_",
        "ncclKernel_",
        "rcclKernel_",
        "ncclDevFunc_",
    ] {
        if let Some(rest) = base.strip_prefix(prefix) {
            return rest.split('_').next().unwrap_or(rest).to_owned();
        }
    }
    base.to_owned()
}

fn instance(work: &WorkRows, row: usize) -> Instance {
    let r = &work.rows[row];
    match r.collective.as_deref() {
        Some(c) => {
            let size = c.dtype.as_deref().and_then(dtype_bytes);
            let canon = canonical(&c.name);
            // nccl-tests' S: the gathered output for all-gather, the whole
            // input otherwise.
            let elements = if canon.contains("allgather") {
                c.out_elements.or(c.in_elements)
            } else {
                c.in_elements.or(c.out_elements)
            };
            Instance {
                row,
                op: c.name.clone(),
                process_group: c.process_group.clone().unwrap_or_default(),
                bytes: elements.zip(size).and_then(|(e, s)| e.checked_mul(s)),
                group_size: c.group_size,
                dtype: c.dtype.clone(),
                from_args: true,
            }
        }
        None => Instance {
            row,
            op: op_from_kernel(work.strings.get(r.name)),
            process_group: String::new(),
            bytes: None,
            group_size: None,
            dtype: None,
            from_args: false,
        },
    }
}

/// Collectives per artifact, and the n-th instance of each (operation,
/// process group) matched across artifacts when there are several.
pub fn match_instances(work: &WorkRows, _params: &DiagnosisParams) -> CollectiveInstances {
    let mut per_artifact: BTreeMap<u32, Vec<Instance>> = BTreeMap::new();
    let mut order: Vec<usize> = (0..work.rows.len())
        .filter(|i| work.rows[*i].class == WorkClass::Communication)
        .collect();
    order.sort_by_key(|i| (work.rows[*i].artifact, work.rows[*i].ts, *i));
    for i in order {
        per_artifact
            .entry(work.rows[i].artifact)
            .or_default()
            .push(instance(work, i));
    }
    let mut matched = Vec::new();
    if per_artifact.len() >= 2 {
        // (op, group, n-th) → members.
        let mut keyed: BTreeMap<(String, String, usize), Vec<(u32, usize)>> = BTreeMap::new();
        for (artifact, instances) in &per_artifact {
            let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
            for inst in instances {
                let k = (canonical(&inst.op), inst.process_group.clone());
                let n = seen.entry(k.clone()).or_default();
                keyed
                    .entry((k.0, k.1, *n))
                    .or_default()
                    .push((*artifact, inst.row));
                *n += 1;
            }
        }
        for ((_, _, _), members) in keyed {
            if members.len() < 2 {
                continue;
            }
            let starts: Vec<i64> = members.iter().map(|(_, r)| work.rows[*r].ts).collect();
            let ends: Vec<i64> = members.iter().map(|(_, r)| work.rows[*r].end).collect();
            let Some((last, last_arrival)) = members
                .iter()
                .map(|(a, r)| (*a, work.rows[*r].ts))
                .max_by_key(|(a, ts)| (*ts, std::cmp::Reverse(*a)))
            else {
                continue;
            };
            let op = per_artifact
                .get(&members[0].0)
                .and_then(|v| v.iter().find(|i| i.row == members[0].1))
                .map(|i| i.op.clone())
                .unwrap_or_default();
            matched.push(Matched {
                op,
                last_arrival,
                last,
                median_arrival: median_i64(&starts).unwrap_or(last_arrival),
                end_spread_ns: ends.iter().max().unwrap_or(&0) - ends.iter().min().unwrap_or(&0),
                members,
            });
        }
        matched.sort_by_key(|m| (m.last_arrival, m.last));
    }
    CollectiveInstances {
        per_artifact,
        matched,
    }
}

/// Collectives of one operation and message on one artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveRow {
    pub rank: Option<i64>,
    pub artifact_id: String,
    /// The operation (PyTorch's name when the args carry it).
    pub collective: String,
    /// `args` or `kernel name`.
    pub read_from: String,
    pub dtype: Option<String>,
    pub group_size: Option<i64>,
    /// Bytes per instance (nccl-tests' S); null without args.
    pub bytes: Option<i64>,
    pub count: i64,
    pub time_ns: i64,
    pub median_ns: i64,
    /// Kernel time during which no compute kernel ran on the device.
    pub exposed_ns: i64,
    /// S / median kernel time (kernel time includes waiting for peers).
    pub algbw_gb_per_s: Option<f64>,
    /// algbw × the operation's bus factor over `group_size` ranks.
    pub busbw_gb_per_s: Option<f64>,
    /// The same over the median transfer (end − last rank's arrival), when
    /// matched across ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busbw_after_last_arrival_gb_per_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collectives {
    /// Collective kernels in scope.
    pub kernels: i64,
    pub time_ns: i64,
    pub exposed_ns: i64,
    /// The exposed part after the last rank arrived (the transfer itself;
    /// before it, the rank waited for a peer: see `ranks`). Equal to
    /// `exposed_ns` when no instance matched across ranks.
    pub exposed_after_last_arrival_ns: i64,
    /// Most time first, at most `limit` per artifact of the ranks shown.
    pub rows: Vec<CollectiveRow>,
    pub rows_total: usize,
    /// Instances matched on two ranks or more.
    pub matched_instances: usize,
    /// Median over matched instances of (latest end − earliest end): a
    /// collective ends together on every rank, so a large value means the
    /// ranks' clocks disagree and arrivals cannot be compared.
    pub end_spread_median_ns: Option<i64>,
    /// MPI calls (Nsight's MPI trace), when the trace has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi: Option<super::mpi_calls::MpiCalls>,
}

/// The section over `work`, with its devices' busy segments `unions`.
pub fn collectives(
    work: &WorkRows,
    unions: &UnionsByDevice,
    inst: &CollectiveInstances,
    params: &DiagnosisParams,
) -> Collectives {
    // Where the transfer starts (the last rank's arrival) per row, for
    // matched instances.
    let mut arrival: BTreeMap<usize, i64> = BTreeMap::new();
    for m in &inst.matched {
        for (_, r) in &m.members {
            let row = &work.rows[*r];
            arrival.insert(*r, m.last_arrival.clamp(row.ts, row.end));
        }
    }
    type Key = (u32, String, Option<String>, Option<i64>, Option<i64>, bool);
    let mut groups: BTreeMap<Key, (Vec<i64>, i64, Vec<i64>)> = BTreeMap::new();
    let (mut kernels, mut time_ns, mut exposed_total, mut exposed_transfer) = (0, 0, 0, 0);
    for (artifact, instances) in &inst.per_artifact {
        for i in instances {
            let r = &work.rows[i.row];
            let compute = |from: i64| {
                unions
                    .get(&(r.artifact, r.device))
                    .map_or(0, |u| covered_in(&u.compute, from, r.end))
            };
            let exposed = r.dur() - compute(r.ts);
            let from = arrival.get(&i.row).copied().unwrap_or(r.ts);
            kernels += 1;
            time_ns += r.dur();
            exposed_total += exposed;
            exposed_transfer += (r.end - from) - compute(from);
            let g = groups
                .entry((
                    *artifact,
                    i.op.clone(),
                    i.dtype.clone(),
                    i.group_size,
                    i.bytes,
                    i.from_args,
                ))
                .or_default();
            g.0.push(r.dur());
            g.1 += exposed;
            if let Some(a) = arrival.get(&i.row) {
                g.2.push(r.end - a);
            }
        }
    }
    let world = |artifact: &str| params.facts.get(artifact).and_then(|f| f.world_size);
    let rows_total = groups.len();
    let mut rows: Vec<CollectiveRow> = groups
        .into_iter()
        .map(
            |((artifact, op, dtype, group, bytes, from_args), (durs, exposed, transfers))| {
                let artifact = work.strings.get(artifact);
                let median = median_i64(&durs).unwrap_or(0);
                let n = group.or_else(|| world(artifact));
                let rate = |ns: i64| bytes.filter(|_| ns > 0).map(|b| b as f64 / ns as f64);
                let factor = n.and_then(|n| bus_factor(&op, n));
                CollectiveRow {
                    rank: params.rank(artifact),
                    artifact_id: artifact.to_owned(),
                    read_from: if from_args { "args" } else { "kernel name" }.to_owned(),
                    dtype,
                    group_size: n,
                    bytes,
                    count: durs.len() as i64,
                    time_ns: durs.iter().sum(),
                    median_ns: median,
                    exposed_ns: exposed,
                    algbw_gb_per_s: rate(median),
                    busbw_gb_per_s: rate(median).zip(factor).map(|(r, f)| r * f),
                    busbw_after_last_arrival_gb_per_s: median_i64(&transfers)
                        .and_then(rate)
                        .zip(factor)
                        .map(|(r, f)| r * f),
                    collective: op,
                }
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        (a.rank, &a.artifact_id)
            .cmp(&(b.rank, &b.artifact_id))
            .then_with(|| b.time_ns.cmp(&a.time_ns))
            .then_with(|| a.collective.cmp(&b.collective))
    });
    // At most `limit` rows per artifact, and at most 4 artifacts' rows
    // (the rank view compares all ranks).
    let mut kept: Vec<CollectiveRow> = Vec::new();
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for row in rows {
        let shown = per.len();
        let n = per.entry(row.artifact_id.clone()).or_default();
        if *n < params.limit && (shown < 4 || *n > 0) {
            *n += 1;
            kept.push(row);
        }
    }
    let spreads: Vec<i64> = inst.matched.iter().map(|m| m.end_spread_ns).collect();
    Collectives {
        kernels,
        time_ns,
        exposed_ns: exposed_total,
        exposed_after_last_arrival_ns: exposed_transfer,
        rows: kept,
        rows_total,
        matched_instances: inst.matched.len(),
        end_spread_median_ns: median_i64(&spreads),
        mpi: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_and_bus_factors_follow_nccl_tests() {
        assert_eq!(
            op_from_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"),
            "AllReduce"
        );
        assert_eq!(
            op_from_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "AllGather"
        );
        assert_eq!(bus_factor("allreduce", 2), Some(1.0));
        assert_eq!(bus_factor("AllReduce", 8), Some(1.75));
        assert_eq!(bus_factor("_allgather_base", 8), Some(0.875));
        assert_eq!(bus_factor("ReduceScatter", 4), Some(0.75));
        assert_eq!(bus_factor("SendRecv", 8), Some(1.0));
        assert_eq!(bus_factor("barrier", 8), None);
        assert_eq!(dtype_bytes("BFloat16"), Some(2));
        assert_eq!(dtype_bytes("Float"), Some(4));
        assert_eq!(dtype_bytes("complex"), None);
    }
}
