//! The page a Chromium renderer process shows: the URL of its last
//! outermost-main-frame navigation (`navigationStart`'s
//! `documentLoaderURL`). Thread lists label renderers with it, so the page
//! and, say, the omnibox popup — both `CrRendererMain` — read apart. A
//! Perfetto trace may record the mark on a global track with no pid at
//! all: then the renderer is the process whose own slices name the same
//! frame id (`ParseHTML`'s `beginData.frame`). The load milestones of
//! that frame (`domContentLoadedEventEnd`, `loadEventEnd`, first paints)
//! come with it, as offsets from the navigation.

use std::collections::BTreeMap;

use datafusion::logical_expr::{col, lit};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};

/// Longest URL kept in a label (the rest is cut with `…`).
const URL_CHARS: usize = 80;

/// The page URL of each pid that navigated, by pid.
pub async fn page_urls(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<BTreeMap<i64, String>> {
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(col("name").eq(lit("navigationStart")))
                .and(col("args_json").is_not_null()),
        )?
        .select(vec![
            col("artifact_id"),
            col("track_id"),
            col("pid"),
            col("ts_ns"),
            col("args_json"),
        ])?;
    let batches = collect(df).await?;
    let mut track_pids: BTreeMap<(String, i64), i64> = BTreeMap::new();
    if batches
        .iter()
        .any(|b| b.column_by_name("pid").is_some_and(|c| c.null_count() > 0))
    {
        let tracks = table(ctx, "tracks")
            .await?
            .filter(scope.filter().and(col("pid").is_not_null()))?
            .select(vec![col("artifact_id"), col("track_id"), col("pid")])?;
        for batch in collect(tracks).await? {
            for i in 0..batch.num_rows() {
                if let (Some(a), Some(t), Some(p)) = (
                    string_at(column(&batch, "artifact_id")?, i),
                    i64_at(column(&batch, "track_id")?, i),
                    i64_at(column(&batch, "pid")?, i),
                ) {
                    track_pids.insert((a, t), p);
                }
            }
        }
    }
    let mut latest: BTreeMap<i64, (i64, String)> = BTreeMap::new();
    for batch in &batches {
        for i in 0..batch.num_rows() {
            let pid = i64_at(column(batch, "pid")?, i).or_else(|| {
                let artifact = string_at(column(batch, "artifact_id").ok()?, i)?;
                let track = i64_at(column(batch, "track_id").ok()?, i)?;
                track_pids.get(&(artifact, track)).copied()
            });
            let Some(args) = string_at(column(batch, "args_json")?, i) else {
                continue;
            };
            let pid = match pid {
                Some(p) => Some(p),
                None => match frame_of(&args) {
                    Some(frame) => pid_of_frame(ctx, scope, &frame).await?,
                    None => None,
                },
            };
            let Some(pid) = pid else {
                continue;
            };
            let ts = i64_at(column(batch, "ts_ns")?, i).unwrap_or(0);
            let Some(url) = outermost_url(&args) else {
                continue;
            };
            if latest.get(&pid).is_none_or(|(t, _)| ts >= *t) {
                latest.insert(pid, (ts, url));
            }
        }
    }
    Ok(latest
        .into_iter()
        .map(|(pid, (_, url))| (pid, url))
        .collect())
}

/// The frame id a mark's args name (`frame`, or `data.frame`).
fn frame_of(args_json: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(args_json).ok()?;
    args.get("frame")
        .or_else(|| args.get("data").and_then(|d| d.get("frame")))
        .and_then(serde_json::Value::as_str)
        .filter(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(str::to_owned)
}

/// The pid of the first slice with a pid whose args name `frame`.
async fn pid_of_frame(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
    frame: &str,
) -> RecipeResult<Option<i64>> {
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(col("pid").is_not_null())
                .and(col("args_json").like(lit(format!("%{frame}%")))),
        )?
        .select(vec![col("pid")])?
        .limit(0, Some(1))?;
    for batch in collect(df).await? {
        if batch.num_rows() > 0 {
            return Ok(i64_at(column(&batch, "pid")?, 0));
        }
    }
    Ok(None)
}

/// Load milestones a page's marks record, in load order.
pub const MILESTONES: &[&str] = &[
    "domInteractive",
    "domContentLoadedEventEnd",
    "firstPaint",
    "firstContentfulPaint",
    "loadEventEnd",
    "largestContentfulPaint::Candidate",
];

/// A load milestone: its name and how long after the navigation it came.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Milestone {
    pub name: String,
    pub after_navigation_ns: i64,
}

/// The milestones of the navigation of `url` in `scope`: the first of each
/// [`MILESTONES`] name at or after the navigation (the last one for LCP
/// candidates), in time order.
pub async fn milestones(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
    url: &str,
) -> RecipeResult<Vec<Milestone>> {
    let names = std::iter::once("navigationStart")
        .chain(MILESTONES.iter().copied())
        .map(lit)
        .collect();
    let df = table(ctx, "trace_events")
        .await?
        .filter(scope.filter().and(col("name").in_list(names, false)))?
        .select(vec![col("name"), col("ts_ns"), col("args_json")])?;
    let mut start: Option<(i64, Option<String>)> = None;
    let mut marks: Vec<(String, i64, Option<String>)> = Vec::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let name = string_at(column(&batch, "name")?, i).unwrap_or_default();
            let ts = i64_at(column(&batch, "ts_ns")?, i).unwrap_or(0);
            let args = string_at(column(&batch, "args_json")?, i);
            if name == "navigationStart" {
                let shows = args
                    .as_deref()
                    .and_then(outermost_url)
                    .is_some_and(|u| u == url);
                if shows && start.as_ref().is_none_or(|(t, _)| ts > *t) {
                    start = Some((ts, args.as_deref().and_then(frame_of)));
                }
            } else {
                marks.push((name, ts, args.as_deref().and_then(frame_of)));
            }
        }
    }
    let Some((t0, frame)) = start else {
        return Ok(Vec::new());
    };
    let mut first: BTreeMap<String, i64> = BTreeMap::new();
    for (name, ts, f) in marks {
        if ts < t0 || (frame.is_some() && f.is_some() && f != frame) {
            continue;
        }
        let slot = first.entry(name.clone()).or_insert(ts);
        *slot = if name.starts_with("largestContentfulPaint") {
            (*slot).max(ts)
        } else {
            (*slot).min(ts)
        };
    }
    let mut out: Vec<Milestone> = first
        .into_iter()
        .map(|(name, ts)| Milestone {
            name,
            after_navigation_ns: ts - t0,
        })
        .collect();
    out.sort_by_key(|m| m.after_navigation_ns);
    Ok(out)
}

/// The URL of an outermost main frame's navigation, when it names one.
fn outermost_url(args_json: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(args_json).ok()?;
    let data = args.get("data")?;
    if data
        .get("isOutermostMainFrame")
        .and_then(serde_json::Value::as_bool)
        == Some(false)
    {
        return None;
    }
    let url = data.get("documentLoaderURL")?.as_str()?;
    if url.is_empty() {
        return None;
    }
    Some(if url.chars().count() > URL_CHARS {
        let mut cut: String = url.chars().take(URL_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        url.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::outermost_url;

    #[test]
    fn outermost_navigations_name_their_page() {
        let page =
            r#"{"data":{"documentLoaderURL":"file:///tmp/page.html","isOutermostMainFrame":true}}"#;
        assert_eq!(
            outermost_url(page).as_deref(),
            Some("file:///tmp/page.html")
        );
        let inner =
            r#"{"data":{"documentLoaderURL":"https://ad.example","isOutermostMainFrame":false}}"#;
        assert_eq!(outermost_url(inner), None);
        assert_eq!(outermost_url(r#"{"data":{"documentLoaderURL":""}}"#), None);
        assert_eq!(outermost_url("not json"), None);
        let long = format!(
            r#"{{"data":{{"documentLoaderURL":"https://x/{}"}}}}"#,
            "a".repeat(200)
        );
        assert_eq!(outermost_url(&long).map(|u| u.chars().count()), Some(80));
    }
}
