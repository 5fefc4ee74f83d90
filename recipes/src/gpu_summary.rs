//! `nsys stats`-style summaries of device and API activity: per name, the
//! total, share of the total, count, average, median, min, max and sample
//! standard deviation — over kernels (NCCL kernels included), runtime/driver
//! API calls, and memcpy by time or by size. One aggregate plan over `trace_events` filtered by
//! kind; unterminated rows (`dur_ns < 0`) are left out.

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{
    count, count_distinct, max, median, min, stddev, sum,
};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext, cast};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeError, RecipeResult, collect, column, f64_at, i64_at, string_at, table,
};
use crate::kernel_family::{kernel_family, kernel_family_expr};

/// Which summary (the names `nsys stats` users know).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuReport {
    Kernels,
    Api,
    MemcpyTime,
    MemcpySize,
    MemsetTime,
}

impl GpuReport {
    pub const ALL: [GpuReport; 5] = [
        GpuReport::Kernels,
        GpuReport::Api,
        GpuReport::MemcpyTime,
        GpuReport::MemcpySize,
        GpuReport::MemsetTime,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GpuReport::Kernels => "kernels",
            GpuReport::Api => "api",
            GpuReport::MemcpyTime => "memcpy-time",
            GpuReport::MemcpySize => "memcpy-size",
            GpuReport::MemsetTime => "memset-time",
        }
    }

    pub fn from_name(name: &str) -> Option<GpuReport> {
        GpuReport::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The rows the report covers: by kind; NCCL/RCCL kernels are kind
    /// `communication` with category `kernel` (`nccl:` annotations are
    /// `communication` too, on host threads or as GPU user annotations).
    fn rows(self) -> Expr {
        let kind = || cast(col("kind"), DataType::Utf8);
        let any = |kinds: &[&str]| kind().in_list(kinds.iter().map(|k| lit(*k)).collect(), false);
        match self {
            GpuReport::Kernels => crate::accelerator::kernel_rows(),
            GpuReport::Api => any(&["runtime_api", "driver_api", "graph_launch"]),
            GpuReport::MemcpyTime | GpuReport::MemcpySize => any(&["memcpy"]),
            GpuReport::MemsetTime => any(&["memset"]),
        }
    }

    /// `ns`, or `bytes` for the size report.
    pub fn unit(self) -> &'static str {
        match self {
            GpuReport::MemcpySize => "bytes",
            _ => "ns",
        }
    }

    fn value(self) -> Expr {
        match self {
            GpuReport::MemcpySize => col("bytes"),
            _ => col("dur_ns"),
        }
    }
}

/// One name's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub name: String,
    /// Distinct names in the row (1 unless grouped by family).
    pub variants: i64,
    pub total: i64,
    /// Share of the report's total, in percent (2 decimals).
    pub percent: f64,
    pub count: i64,
    pub avg: f64,
    pub median: f64,
    pub min: i64,
    pub max: i64,
    /// Sample standard deviation (0 for a single instance).
    pub stddev: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryAnswer {
    pub report: GpuReport,
    pub unit: String,
    /// Sum over every name (the % denominator).
    pub grand_total: i64,
    /// Distinct names (families, with `by_family`).
    pub names: u64,
    /// Distinct kernel families among them (names without template
    /// arguments or parameters).
    pub families: u64,
    /// Rows are families, each with its `variants`.
    pub by_family: bool,
    pub rows: Vec<SummaryRow>,
}

/// The `limit` heaviest names of `report` in `scope`.
pub async fn gpu_summary(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    report: GpuReport,
    by_family: bool,
    limit: usize,
) -> RecipeResult<SummaryAnswer> {
    let value = report.value();
    let name = if by_family {
        kernel_family_expr(col("name"))
    } else {
        cast(col("name"), DataType::Utf8)
    };
    let rows = table(ctx, "trace_events").await?.filter(
        scope
            .filter()
            .and(report.rows())
            .and(col("dur_ns").gt_eq(lit(0i64)))
            .and(value.clone().is_not_null()),
    )?;
    let filtered = if report == GpuReport::Api {
        api_calls_once(rows)?
    } else {
        rows.select(vec![
            name.alias("name"),
            cast(col("name"), DataType::Utf8).alias("variant"),
            value.alias("value"),
        ])?
    };
    let grouped = filtered.aggregate(
        vec![col("name")],
        vec![
            count_distinct(col("variant")).alias("variants"),
            sum(col("value")).alias("total"),
            count(lit(1)).alias("count"),
            cast(median(col("value")), DataType::Float64).alias("median"),
            min(col("value")).alias("min"),
            max(col("value")).alias("max"),
            cast(
                stddev(cast(col("value"), DataType::Float64)),
                DataType::Float64,
            )
            .alias("stddev"),
        ],
    )?;
    let mut rows = Vec::new();
    for batch in collect(grouped).await? {
        for i in 0..batch.num_rows() {
            let total = i64_at(column(&batch, "total")?, i).unwrap_or(0);
            let count = i64_at(column(&batch, "count")?, i).unwrap_or(0);
            rows.push(SummaryRow {
                name: string_at(column(&batch, "name")?, i).unwrap_or_default(),
                variants: i64_at(column(&batch, "variants")?, i).unwrap_or(1),
                total,
                percent: 0.0,
                count,
                avg: if count > 0 {
                    total as f64 / count as f64
                } else {
                    0.0
                },
                median: f64_at(column(&batch, "median")?, i).unwrap_or(0.0),
                min: i64_at(column(&batch, "min")?, i).unwrap_or(0),
                max: i64_at(column(&batch, "max")?, i).unwrap_or(0),
                stddev: f64_at(column(&batch, "stddev")?, i).unwrap_or(0.0),
            });
        }
    }
    let grand_total: i64 = rows.iter().map(|r| r.total).sum();
    for r in &mut rows {
        r.percent = if grand_total > 0 {
            (r.total as f64 * 10_000.0 / grand_total as f64).round() / 100.0
        } else {
            0.0
        };
    }
    rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
    let names = rows.len() as u64;
    let families = if by_family {
        names
    } else {
        let distinct: std::collections::BTreeSet<String> =
            rows.iter().map(|r| kernel_family(&r.name)).collect();
        distinct.len() as u64
    };
    rows.truncate(limit);
    Ok(SummaryAnswer {
        report,
        unit: report.unit().to_owned(),
        grand_total,
        names,
        families,
        by_family,
        rows,
    })
}

/// An API call's name without nsys's version suffix
/// (`cudaLaunchKernel_v7000` → `cudaLaunchKernel`), as `nsys stats` folds
/// it; None when the name has none.
pub fn api_base_name(name: &str) -> Option<String> {
    let (base, version) = name.rsplit_once("_v")?;
    (!base.is_empty() && !version.is_empty() && version.chars().all(|c| c.is_ascii_digit()))
        .then(|| base.to_owned())
}

fn api_base_or_name(name: &str) -> Option<String> {
    Some(api_base_name(name).unwrap_or_else(|| name.to_owned()))
}

fn api_name_udf(name: Expr) -> Expr {
    crate::text_udf::text_udf("flameox_api_base_name", api_base_or_name, name)
}

/// The UDF of [`api_base_name`] (registered where plans are decoded by
/// function name: [`crate::text_udf::recipe_udfs`]).
pub fn api_name_udf_function() -> datafusion::logical_expr::ScalarUDF {
    crate::text_udf::text_udf_function("flameox_api_base_name", api_base_or_name)
}

/// API calls each counted once, by their unversioned name: nsys exports
/// record a versioned inner call (`cudaLaunchKernel_v7000`) inside the
/// unversioned one with the same correlation id, so the inner one is left
/// out when the outer one is there, and a versioned call alone is named
/// as `nsys stats` names it.
fn api_calls_once(rows: DataFrame) -> RecipeResult<DataFrame> {
    let named = rows.select(vec![
        col("artifact_id"),
        col("correlation_id"),
        cast(col("name"), DataType::Utf8).alias("variant"),
        api_name_udf(col("name")).alias("name"),
        col("dur_ns").alias("value"),
    ])?;
    let versioned = col("name").not_eq(col("variant"));
    let outer = named.clone().filter(col("name").eq(col("variant")))?;
    let outer_keys = outer.clone().select(vec![
        col("artifact_id").alias("o_artifact"),
        col("correlation_id").alias("o_corr"),
        col("name").alias("o_name"),
    ])?;
    let inner_alone = named.filter(versioned)?.join(
        outer_keys,
        datafusion::prelude::JoinType::LeftAnti,
        &["artifact_id", "correlation_id", "name"],
        &["o_artifact", "o_corr", "o_name"],
        None,
    )?;
    let keep = || vec![col("name"), col("variant"), col("value")];
    Ok(outer.select(keep())?.union(inner_alone.select(keep())?)?)
}

/// `report` by name, or the valid names.
pub fn parse_report(name: &str) -> RecipeResult<GpuReport> {
    GpuReport::from_name(name).ok_or_else(|| RecipeError::NotFound {
        what: format!("report {name}"),
        closest: Vec::new(),
        valid: GpuReport::ALL.iter().map(|r| r.name().to_owned()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::api_base_name;

    #[test]
    fn versioned_api_names_fold_as_nsys_stats_folds_them() {
        assert_eq!(
            api_base_name("cudaLaunchKernel_v7000").as_deref(),
            Some("cudaLaunchKernel")
        );
        assert_eq!(
            api_base_name("cudaMalloc_v3020").as_deref(),
            Some("cudaMalloc")
        );
        assert_eq!(api_base_name("cudaLaunchKernel"), None);
        assert_eq!(api_base_name("foo_var"), None);
        assert_eq!(api_base_name("_v12"), None);
    }
}
