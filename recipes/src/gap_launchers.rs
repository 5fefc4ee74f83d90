//! Which host thread launched the device activity that ended a GPU gap: the
//! host call carrying the same correlation id as the kernel (or copy) after
//! the gap. A gap is then explained by what *that* thread did meanwhile — a
//! helper thread waiting in `threading.py: wait` at the same moment says
//! nothing about why the next kernel came late.

use std::collections::{BTreeSet, HashMap, HashSet};

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult, column, i64_at, string_at, table};
use crate::device_pass::for_each_batch;
use crate::host_activity::HOST_KINDS;

/// The host call that launched one device activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launcher {
    /// The launching call (e.g. `cudaLaunchKernel`).
    pub name: String,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    /// Thread name, when the trace names it (filled by the caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    #[serde(skip)]
    pub track: Option<i64>,
    /// When the launch call started, ns.
    pub ts_ns: i64,
    /// When it returned, ns.
    #[serde(skip)]
    pub end_ns: i64,
}

/// Correlation ids asked for in an IN list at most; more are checked
/// against a hash set as the launch calls stream past.
const IN_LIST_MAX: usize = 64;

/// The launcher of each `(artifact_id, correlation_id)` asked for, when the
/// trace has a host row with that correlation. Of several host rows under
/// one id (`cudaLaunchKernel` ⊃ `cudaLaunchKernel_v7000`) the outermost —
/// earliest start, then longest — is kept.
pub async fn launchers(
    ctx: &SessionContext,
    wanted: &[(String, i64)],
) -> RecipeResult<HashMap<(String, i64), Launcher>> {
    let mut out: HashMap<(String, i64), (i64, Launcher)> = HashMap::new();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    let scope = ArtifactScope {
        artifact_ids: wanted
            .iter()
            .map(|(a, _)| a.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    let kinds = HOST_KINDS.iter().map(|k| lit(*k)).collect();
    // Few ids: an IN list; many (every gap of a trace): every correlated
    // host call streams past a hash-set check (an IN list of thousands of
    // literals is evaluated per row).
    let mut filter = scope
        .filter()
        .and(col("stream").is_null())
        .and(col("kind").in_list(kinds, false))
        .and(col("correlation_id").is_not_null());
    if wanted.len() <= IN_LIST_MAX {
        let correlations: BTreeSet<i64> = wanted.iter().map(|(_, c)| *c).collect();
        filter = filter.and(
            col("correlation_id").in_list(correlations.iter().map(|c| lit(*c)).collect(), false),
        );
    }
    let df = table(ctx, "trace_events").await?.filter(filter)?.select(
        [
            "artifact_id",
            "correlation_id",
            "name",
            "pid",
            "tid",
            "track_id",
            "ts_ns",
            "dur_ns",
        ]
        .into_iter()
        .map(col)
        .collect::<Vec<_>>(),
    )?;
    let wanted: HashSet<(&str, i64)> = wanted.iter().map(|(a, c)| (a.as_str(), *c)).collect();
    for_each_batch(df, |batch| {
        let artifacts = column(batch, "artifact_id")?;
        let correlations = column(batch, "correlation_id")?;
        for row in 0..batch.num_rows() {
            let (Some(artifact), Some(correlation)) =
                (string_at(artifacts, row), i64_at(correlations, row))
            else {
                continue;
            };
            if !wanted.contains(&(artifact.as_str(), correlation)) {
                continue;
            }
            let key = (artifact, correlation);
            let ts = i64_at(column(batch, "ts_ns")?, row).unwrap_or(0);
            let dur = i64_at(column(batch, "dur_ns")?, row).unwrap_or(0);
            let outer = match out.get(&key) {
                Some((kept_dur, kept)) => (ts, -dur) < (kept.ts_ns, -kept_dur),
                None => true,
            };
            if outer {
                let launcher = Launcher {
                    name: string_at(column(batch, "name")?, row).unwrap_or_default(),
                    pid: i64_at(column(batch, "pid")?, row),
                    tid: i64_at(column(batch, "tid")?, row),
                    thread: None,
                    track: i64_at(column(batch, "track_id")?, row),
                    ts_ns: ts,
                    end_ns: ts.saturating_add(dur.max(0)),
                };
                out.insert(key, (dur, launcher));
            }
        }
        Ok(())
    })
    .await?;
    Ok(out.into_iter().map(|(k, (_, l))| (k, l)).collect())
}
