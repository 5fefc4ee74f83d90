//! The page a Chromium renderer process shows: the URL of its last
//! outermost-main-frame navigation (`navigationStart`'s
//! `documentLoaderURL`). Thread lists label renderers with it, so the page
//! and, say, the omnibox popup — both `CrRendererMain` — read apart.

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
        .select(vec![col("pid"), col("ts_ns"), col("args_json")])?;
    let mut latest: BTreeMap<i64, (i64, String)> = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let (Some(pid), Some(args)) = (
                i64_at(column(&batch, "pid")?, i),
                string_at(column(&batch, "args_json")?, i),
            ) else {
                continue;
            };
            let ts = i64_at(column(&batch, "ts_ns")?, i).unwrap_or(0);
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
