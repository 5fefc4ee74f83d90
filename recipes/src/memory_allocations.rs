//! Kineto's allocation events (`[memory]` instants, `bytes` = signed size):
//! totals per device, and the sites (enclosing slice) that allocated the
//! most. A site is the allocation's parent event: the parents wanted are
//! collected first and looked up in one streamed scan, instead of a hash
//! join whose build side held every event of the trace (1.5 GB RSS at
//! 10 M events).

use std::collections::HashMap;

use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{Expr, col, lit, when};
use datafusion::prelude::{DataFrame, SessionContext};
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table, utf8};
use crate::device_pass::{Interner, for_each_batch, ints};

/// The instant name Kineto gives allocation events.
pub const ALLOCATION_EVENT: &str = "[memory]";

/// Allocation events of one device (None = host memory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationTotals {
    pub artifact_id: String,
    pub device: Option<i64>,
    pub allocations: i64,
    pub frees: i64,
    pub allocated_bytes: i64,
    pub freed_bytes: i64,
}

/// Where allocations happened: the slice enclosing the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationSite {
    pub device: Option<i64>,
    /// The enclosing slice's name (`(none)` when the event has no parent).
    pub site: String,
    pub site_kind: Option<String>,
    pub allocations: i64,
    pub bytes: i64,
}

async fn allocation_events(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<DataFrame> {
    Ok(table(ctx, "trace_events").await?.filter(
        scope
            .filter()
            .and(utf8("name").eq(lit(ALLOCATION_EVENT)))
            .and(utf8("kind").eq(lit("instant")))
            .and(col("bytes").is_not_null()),
    )?)
}

pub(crate) async fn allocation_totals(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<Vec<AllocationTotals>> {
    let positive = || col("bytes").gt(lit(0i64));
    let negative = || col("bytes").lt(lit(0i64));
    let part = |cond: Expr, value: Expr| -> RecipeResult<Expr> {
        Ok(sum(when(cond, value).otherwise(lit(0i64))?))
    };
    let totals = allocation_events(ctx, scope)
        .await?
        .aggregate(
            vec![utf8("artifact_id").alias("artifact"), col("device")],
            vec![
                part(positive(), lit(1i64))?.alias("allocations"),
                part(negative(), lit(1i64))?.alias("frees"),
                part(positive(), col("bytes"))?.alias("allocated"),
                part(negative(), lit(0i64) - col("bytes"))?.alias("freed"),
            ],
        )?
        .sort(vec![
            col("artifact").sort(true, false),
            col("device").sort(true, true),
        ])?;
    let mut out = Vec::new();
    for batch in collect(totals).await? {
        for i in 0..batch.num_rows() {
            let int =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            out.push(AllocationTotals {
                artifact_id: string_at(column(&batch, "artifact")?, i).unwrap_or_default(),
                device: i64_at(column(&batch, "device")?, i),
                allocations: int("allocations")?,
                frees: int("frees")?,
                allocated_bytes: int("allocated")?,
                freed_bytes: int("freed")?,
            });
        }
    }
    Ok(out)
}

/// An allocation's parent event: (artifact, event id).
type ParentKey = (u32, i64);

/// A site's group: device, enclosing slice name, its kind.
type SiteKey = (Option<i64>, String, Option<u32>);

/// Allocations (bytes > 0) grouped by device and enclosing slice name
/// (`(none)` without a terminated parent), most bytes first.
pub(crate) async fn allocation_sites(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
) -> RecipeResult<(u64, Vec<AllocationSite>)> {
    let mut strings = Interner::default();
    let allocations = allocation_events(ctx, scope)
        .await?
        .filter(col("bytes").gt(lit(0i64)))?
        .select(vec![
            col("artifact_id"),
            col("parent_event_id"),
            col("device"),
            col("bytes"),
        ])?;
    // (artifact, parent) → (device, bytes) of each allocation.
    let mut by_parent: HashMap<Option<ParentKey>, Vec<(Option<i64>, i64)>> = HashMap::new();
    for_each_batch(allocations, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let parent = ints(column(batch, "parent_event_id")?)?;
        let device = ints(column(batch, "device")?)?;
        let bytes = ints(column(batch, "bytes")?)?;
        for i in 0..batch.num_rows() {
            let key = artifact[i].zip(parent[i]);
            by_parent
                .entry(key)
                .or_default()
                .push((device[i], bytes[i].unwrap_or(0)));
        }
        Ok(())
    })
    .await?;
    // Each wanted parent's (name, kind), from one streamed scan.
    let mut parents: HashMap<ParentKey, (Option<u32>, Option<u32>)> = HashMap::new();
    if by_parent.keys().any(Option::is_some) {
        let rows = table(ctx, "trace_events")
            .await?
            .filter(scope.filter().and(col("dur_ns").gt_eq(lit(0i64))))?
            .select(vec![
                col("artifact_id"),
                col("event_id"),
                col("name"),
                col("kind"),
            ])?;
        for_each_batch(rows, |batch| {
            let artifact = strings.column(column(batch, "artifact_id")?)?;
            let id = ints(column(batch, "event_id")?)?;
            let mut found = Vec::new();
            for i in 0..batch.num_rows() {
                if let Some(key) = artifact[i].zip(id[i])
                    && by_parent.contains_key(&Some(key))
                {
                    found.push((i, key));
                }
            }
            if found.is_empty() {
                return Ok(());
            }
            let name = strings.column(column(batch, "name")?)?;
            let kind = strings.column(column(batch, "kind")?)?;
            for (i, key) in found {
                parents.insert(key, (name[i], kind[i]));
            }
            Ok(())
        })
        .await?;
    }
    // (device, site, site kind) → (allocations, bytes)
    let mut sites: HashMap<SiteKey, (i64, i64)> = HashMap::new();
    for (parent, list) in &by_parent {
        let (name, kind) = parent
            .and_then(|p| parents.get(&p).copied())
            .unwrap_or((None, None));
        let site = name.map_or("(none)", |n| strings.get(n)).to_owned();
        for (device, bytes) in list {
            let entry = sites.entry((*device, site.clone(), kind)).or_default();
            entry.0 += 1;
            entry.1 += bytes;
        }
    }
    let mut out: Vec<AllocationSite> = sites
        .into_iter()
        .map(
            |((device, site, kind), (allocations, bytes))| AllocationSite {
                device,
                site,
                site_kind: kind.map(|k| strings.get(k).to_owned()),
                allocations,
                bytes,
            },
        )
        .collect();
    out.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.site.cmp(&b.site))
            .then(a.device.cmp(&b.device))
            .then_with(|| a.site_kind.cmp(&b.site_kind))
    });
    let found = out.len() as u64;
    out.truncate(limit);
    Ok((found, out))
}
