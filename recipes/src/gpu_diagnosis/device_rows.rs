//! Device work (kernels, NCCL/RCCL kernels, memcpy, memset) read once with
//! what the diagnoses need from each row's args: launch geometry (Kineto,
//! Nsight and rocprof spell it differently), the collective a
//! communication kernel ran (PyTorch's NCCL args), copy bytes and the
//! memory kinds a copy's name carries (`Memcpy HtoD (Pageable -> Device)`).

use datafusion::arrow::array::RecordBatch;
use datafusion::logical_expr::{Expr, col, lit};
use serde::Deserialize;
use serde_json::Value;

use crate::accelerator::device_work_rows;
use crate::common::{ArtifactScope, RecipeResult, column, table};
use crate::device_pass::{Interner, for_each_batch, ints};
use datafusion::prelude::SessionContext;

/// What a device row is, for the diagnoses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkClass {
    Compute,
    Communication,
    Memcpy,
    Memset,
}

/// Grid and block of a launch, in blocks and threads per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Geometry {
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub registers_per_thread: Option<i64>,
    /// Static plus dynamic shared memory (LDS on AMD), bytes per block.
    pub shared_memory_bytes: Option<i64>,
}

impl Geometry {
    /// Saturating: a damaged trace's dimensions never overflow.
    pub fn blocks(&self) -> i64 {
        self.grid
            .iter()
            .fold(1i64, |n, d| n.saturating_mul((*d).max(1)))
    }

    pub fn threads_per_block(&self) -> i64 {
        self.block
            .iter()
            .fold(1i64, |n, d| n.saturating_mul((*d).max(1)))
    }
}

/// The collective a communication kernel ran, from its args.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CollectiveArgs {
    /// `allreduce`, `_allgather_base`, … as PyTorch names it.
    pub name: String,
    pub in_elements: Option<i64>,
    pub out_elements: Option<i64>,
    pub group_size: Option<i64>,
    pub dtype: Option<String>,
    pub process_group: Option<String>,
}

/// One row of device work.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkRow {
    pub artifact: u32,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub ts: i64,
    pub end: i64,
    pub name: u32,
    pub class: WorkClass,
    pub correlation: Option<i64>,
    pub phase: Option<u32>,
    pub bytes: Option<i64>,
    pub geometry: Option<Geometry>,
    /// Kineto's `blocks per SM` (grid blocks / the device's SMs).
    pub blocks_per_sm: Option<f64>,
    /// Kineto's `est. achieved occupancy %`.
    pub occupancy_pct: Option<f64>,
    pub collective: Option<Box<CollectiveArgs>>,
}

impl WorkRow {
    pub fn dur(&self) -> i64 {
        self.end - self.ts
    }
}

/// The device work of a scope with its strings.
#[derive(Debug, Default)]
pub struct WorkRows {
    pub rows: Vec<WorkRow>,
    pub strings: Interner,
}

/// Args keys as Kineto, Nsight and rocprof write them.
#[derive(Debug, Default, Deserialize)]
struct RawArgs {
    grid: Option<Vec<Value>>,
    block: Option<Vec<Value>>,
    /// rocprof: `grid` counts work items and this the block's.
    workgroup: Option<Vec<Value>>,
    #[serde(
        rename = "registers per thread",
        alias = "registers_per_thread",
        alias = "vgpr"
    )]
    registers: Option<Value>,
    #[serde(
        rename = "shared memory",
        alias = "static_shared_memory",
        alias = "lds_bytes"
    )]
    shared: Option<Value>,
    dynamic_shared_memory: Option<Value>,
    #[serde(rename = "blocks per SM")]
    blocks_per_sm: Option<Value>,
    #[serde(rename = "est. achieved occupancy %")]
    occupancy: Option<Value>,
    #[serde(rename = "Collective name")]
    collective: Option<String>,
    #[serde(rename = "In msg nelems")]
    in_elements: Option<Value>,
    #[serde(rename = "Out msg nelems")]
    out_elements: Option<Value>,
    #[serde(rename = "Group size")]
    group_size: Option<Value>,
    dtype: Option<String>,
    #[serde(rename = "Process Group Name")]
    process_group: Option<Value>,
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn dims(v: &[Value]) -> Option<[i64; 3]> {
    let mut out = [1i64; 3];
    if v.is_empty() || v.len() > 3 {
        return None;
    }
    for (slot, d) in out.iter_mut().zip(v) {
        *slot = int(d).filter(|d| *d >= 0)?;
    }
    Some(out)
}

impl RawArgs {
    fn geometry(&self) -> Option<Geometry> {
        let grid = dims(self.grid.as_deref()?)?;
        let (grid, block) = match self.workgroup.as_deref().and_then(dims) {
            // Work items per dimension over the workgroup's: blocks.
            Some(wg) => {
                let mut blocks = [1i64; 3];
                for i in 0..3 {
                    let per = wg[i].max(1);
                    blocks[i] = grid[i].saturating_add(per - 1) / per;
                }
                (blocks, wg)
            }
            None => (grid, dims(self.block.as_deref()?)?),
        };
        let shared = match (
            self.shared.as_ref().and_then(int),
            self.dynamic_shared_memory.as_ref().and_then(int),
        ) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Some(Geometry {
            grid,
            block,
            registers_per_thread: self.registers.as_ref().and_then(int),
            shared_memory_bytes: shared,
        })
    }

    fn collective(self) -> Option<CollectiveArgs> {
        Some(CollectiveArgs {
            name: self.collective?,
            in_elements: self.in_elements.as_ref().and_then(int),
            out_elements: self.out_elements.as_ref().and_then(int),
            group_size: self.group_size.as_ref().and_then(int),
            dtype: self.dtype,
            process_group: self.process_group.as_ref().map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
        })
    }
}

impl WorkRows {
    /// Device work in `scope`, terminated rows only, optionally inside
    /// `window` (rows starting in `[start, end)`).
    pub async fn read(
        ctx: &SessionContext,
        scope: &ArtifactScope,
        window: Option<(i64, i64)>,
    ) -> RecipeResult<WorkRows> {
        let mut filter = scope
            .filter()
            .and(device_work_rows())
            .and(col("dur_ns").gt_eq(lit(0i64)));
        if let Some((start, end)) = window {
            filter = filter
                .and(col("ts_ns").gt_eq(lit(start)))
                .and(col("ts_ns").lt(lit(end)));
        }
        let columns: Vec<Expr> = [
            "artifact_id",
            "device",
            "stream",
            "name",
            "kind",
            "ts_ns",
            "dur_ns",
            "correlation_id",
            "phase",
            "bytes",
            "args_json",
        ]
        .into_iter()
        .map(col)
        .collect();
        let df = table(ctx, "trace_events")
            .await?
            .filter(filter)?
            .select(columns)?;
        let mut out = WorkRows::default();
        for_each_batch(df, |batch| out.push_batch(batch)).await?;
        Ok(out)
    }

    fn push_batch(&mut self, batch: &RecordBatch) -> RecipeResult<()> {
        let artifact = self.strings.column(column(batch, "artifact_id")?)?;
        let name = self.strings.column(column(batch, "name")?)?;
        let kind = self.strings.column(column(batch, "kind")?)?;
        let phase = self.strings.column(column(batch, "phase")?)?;
        let device = ints(column(batch, "device")?)?;
        let stream = ints(column(batch, "stream")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        let correlation = ints(column(batch, "correlation_id")?)?;
        let bytes = ints(column(batch, "bytes")?)?;
        let args = crate::common::as_utf8(column(batch, "args_json")?)?;
        let args = datafusion::arrow::array::AsArray::as_string::<i32>(args.as_ref());
        let empty = self.strings.id("");
        for i in 0..batch.num_rows() {
            let class = match self.strings.get(kind[i].unwrap_or(empty)) {
                "memcpy" => WorkClass::Memcpy,
                "memset" => WorkClass::Memset,
                "communication" => WorkClass::Communication,
                _ => WorkClass::Compute,
            };
            let raw: RawArgs = if matches!(class, WorkClass::Compute | WorkClass::Communication)
                && datafusion::arrow::array::Array::is_valid(args, i)
            {
                serde_json::from_str(args.value(i)).unwrap_or_default()
            } else {
                RawArgs::default()
            };
            let start = ts[i].unwrap_or(0);
            let geometry = raw.geometry();
            let blocks_per_sm = raw.blocks_per_sm.as_ref().and_then(float);
            let occupancy_pct = raw.occupancy.as_ref().and_then(float);
            let collective = raw.collective().map(Box::new);
            self.rows.push(WorkRow {
                artifact: artifact[i].unwrap_or(empty),
                device: device[i],
                stream: stream[i],
                ts: start,
                end: start + dur[i].unwrap_or(0),
                name: name[i].unwrap_or(empty),
                class,
                correlation: correlation[i],
                phase: phase[i],
                bytes: bytes[i],
                geometry,
                blocks_per_sm,
                occupancy_pct,
                collective,
            });
        }
        Ok(())
    }
}

/// A copy's direction and memory kinds from its name: `Memcpy HtoD
/// (Pageable -> Device)` → (`H2D`, `Pageable`, `Device`).
pub fn copy_kinds(name: &str) -> (&'static str, Option<&str>, Option<&str>) {
    let direction = [
        ("HtoD", "H2D"),
        ("DtoH", "D2H"),
        ("DtoD", "D2D"),
        ("PtoP", "P2P"),
        ("HtoH", "H2H"),
    ]
    .iter()
    .find(|(k, _)| name.contains(k))
    .map_or("other", |(_, d)| *d);
    let kinds = name
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(inner, _)| inner.split_once("->"))
        .map(|(a, b)| (a.trim(), b.trim()));
    match kinds {
        Some((src, dst)) => (direction, Some(src), Some(dst)),
        None => (direction, None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_reads_each_producers_keys() {
        let kineto: RawArgs = serde_json::from_str(
            r#"{"grid":[864,1,1],"block":[256,1,1],"registers per thread":47,"shared memory":0,"blocks per SM":8}"#,
        )
        .expect("kineto");
        let g = kineto.geometry().expect("geometry");
        assert_eq!((g.blocks(), g.threads_per_block()), (864, 256));
        assert_eq!(g.registers_per_thread, Some(47));
        let nsight: RawArgs = serde_json::from_str(
            r#"{"block":[512,1,1],"grid":[2,1,1],"registers_per_thread":16,"static_shared_memory":8,"dynamic_shared_memory":1024}"#,
        )
        .expect("nsight");
        let g = nsight.geometry().expect("geometry");
        assert_eq!((g.blocks(), g.shared_memory_bytes), (2, Some(1032)));
        let rocprof: RawArgs =
            serde_json::from_str(r#"{"grid":[1025,1,1],"workgroup":[512,1,1],"lds_bytes":0}"#)
                .expect("rocprof");
        assert_eq!(rocprof.geometry().map(|g| g.blocks()), Some(3));
        let none: RawArgs = serde_json::from_str(r#"{"grid":"x"}"#).unwrap_or_default();
        assert!(none.geometry().is_none());
        let huge: RawArgs = serde_json::from_str(
            r#"{"grid":[9223372036854775807,9223372036854775807,2],"block":[4294967296,4294967296,4]}"#,
        )
        .expect("huge");
        let g = huge.geometry().expect("geometry");
        assert_eq!((g.blocks(), g.threads_per_block()), (i64::MAX, i64::MAX));
    }

    #[test]
    fn copy_names_give_direction_and_memory_kinds() {
        assert_eq!(
            copy_kinds("Memcpy HtoD (Pageable -> Device)"),
            ("H2D", Some("Pageable"), Some("Device"))
        );
        assert_eq!(copy_kinds("Memcpy DtoH"), ("D2H", None, None));
        assert_eq!(copy_kinds("Memset (Device)"), ("other", None, None));
    }
}
