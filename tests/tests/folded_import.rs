//! Folded stacks through the real binary: content detection picks the
//! folded extractor, hotspots default to `cpu.samples`, the top frame and
//! the total match the text, and the stack drill-down agrees.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};

/// A leaf element's function: `name (file:line)` without its line (the
/// hotspots rank functions, lines merged).
fn function_of(leaf: &str) -> String {
    if let Some(body) = leaf.strip_suffix(')')
        && let Some((head, line)) = body.rsplit_once(':')
        && line.chars().all(|c| c.is_ascii_digit())
        && head.contains(" (")
    {
        return format!("{head})");
    }
    leaf.to_owned()
}

/// Self samples per leaf function and the total, from the plain text.
fn leaf_counts(text: &str) -> (BTreeMap<String, i64>, i64) {
    let mut leaves = BTreeMap::new();
    let mut total = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (stack, count) = line.trim_end().rsplit_once(' ').expect("count");
        let count: i64 = count.parse().expect("integer count");
        total += count;
        let leaf = stack.trim_end().split(';').rfind(|f| !f.is_empty());
        *leaves.entry(function_of(leaf.unwrap_or(""))).or_default() += count;
    }
    (leaves, total)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn folded_corpus_files_import_and_answer_hotspots() {
    let project = Project::new();
    for (rel, top_function) in [
        ("stacks/pyspy_workload.folded.txt", "JSONEncoder.iterencode"),
        (
            "stacks/flamegraph_perf-vertx-stacks-01-collapsed-all.folded.txt",
            "",
        ),
    ] {
        let path = corpus().join(rel);
        let text = std::fs::read_to_string(&path).expect("corpus file");
        let (leaves, total) = leaf_counts(&text);
        let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
        assert_eq!(imported["kind"], "folded_stacks", "{rel}");
        let run = imported["run_id"].as_str().expect("run").to_owned();

        let hot = project.json(&["analyze", "hotspots", &run, "--limit", "1000"]);
        assert_eq!(hot["metric"], "cpu.samples");
        assert_eq!(hot["total_self"].as_i64(), Some(total), "{rel}");
        let top = &hot["rows"][0];
        let best = leaves.values().copied().max().unwrap_or(0);
        assert_eq!(top["self_value"].as_i64(), Some(best), "{rel}");
        if !top_function.is_empty() {
            assert_eq!(top["function"], top_function);
        }
        let frame = top["frame"].as_str().expect("frame key");
        let examples = project.json(&["stacks", "examples", &run, frame, "--limit", "1000"]);
        let weight: i64 = examples["stacks"]
            .as_array()
            .expect("stacks")
            .iter()
            .filter(|s| s["frames"].as_array().and_then(|f| f.last()) == Some(&top["function"]))
            .map(|s| s["weight"].as_i64().unwrap_or(0))
            .sum();
        assert_eq!(
            weight, best,
            "{rel}: leaf stacks weigh the frame's self samples"
        );
    }
}
