//! Every read operation's default answer, on every corpus trace that
//! imports, fits the byte budget an agent pays for one call. Sizes are of
//! the compact JSON result (what MCP's structuredContent carries), measured
//! through the real binary.

use std::path::PathBuf;

use flameox_tests::{Project, corpus};
use serde_json::Value;

/// Bytes one default answer may take: the engine's answer budget
/// (`engine/src/operations/budget.rs`), which cuts a ranked list to the rows
/// that fit. Before that cut (2026-12-04) the largest default answers were
/// 14.0 KB (`analyze gpu-summary` on an Nsight export: 20 templated kernel
/// names), 12.1 KB (hotspots, same export) and 8.9 KB (gpu-gaps).
const BUDGET: usize = flameox_engine::operations::budget::ANSWER_BUDGET;
/// `analyze gpu-breakdown` is a report of six sections (temporal, idle,
/// overlap, kernels, launches, bandwidth) per artifact, not one list:
/// measured at most 11.9 KB on the corpus (`hta_cudagraph_nccl_a100`); its
/// `section` argument returns one of them.
const BREAKDOWN_BUDGET: usize = 12 * 1024;
/// The orientation call's own budget: 6 KiB of orientation plus at most two
/// GPU diagnoses and the call that shows the first (measured at most 6.9 KB
/// on the corpus, `hta_nccl_a100_rank0of2`).
const SUMMARY_BUDGET: usize = 7 * 1024;

/// Whole-target read operations, by CLI path.
const WHOLE: &[&[&str]] = &[
    &["analyze", "summary"],
    &["threads"],
    &["analyze", "hotspots"],
    &["analyze", "gpu-summary"],
    &["analyze", "accelerator-launches"],
    &["analyze", "pytorch"],
    &["analyze", "gpu-gaps"],
    &["analyze", "memory"],
    &["analyze", "gpu-breakdown"],
];
/// Drill-downs from the top frame.
const FROM_FRAME: &[&[&str]] = &[
    &["stacks", "callers"],
    &["stacks", "callees"],
    &["stacks", "examples"],
    &["stacks", "instances"],
];

/// Trace and profile files of the corpus (not folders, not notes).
fn corpus_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(corpus()).expect("corpus").flatten() {
        let Ok(entries) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_file() && !name.ends_with(".md") && !name.ends_with(".nsys-rep") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn compact_size(v: &Value) -> usize {
    serde_json::to_string(v)
        .map(|s| s.len())
        .unwrap_or(usize::MAX)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn every_default_read_answer_fits_the_agent_budget() {
    let project = Project::new();
    let mut imported = 0;
    let mut largest: (usize, String) = (0, String::new());
    let mut over = Vec::new();
    for file in corpus_files() {
        let path = file.to_str().expect("utf-8 path");
        let out = project.run(&["import", path, "--json"]);
        if !out.status.success() {
            continue; // a format this build does not read: covered elsewhere
        }
        let Ok(result) = serde_json::from_slice::<Value>(&out.stdout) else {
            continue;
        };
        let Some(run) = result["run_id"].as_str().map(str::to_owned) else {
            continue;
        };
        imported += 1;
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let mut check = |args: Vec<&str>| {
            let mut all = args.clone();
            all.push("--json");
            let out = project.run(&all);
            // A refusal (no device tracks, not PyTorch) is small by nature;
            // its size counts all the same.
            let body: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            let size = compact_size(&body);
            let what = format!("{} on {name}", args[..args.len() - 1].join(" "));
            let budget = match args[..2] {
                ["analyze", "summary"] => SUMMARY_BUDGET,
                ["analyze", "gpu-breakdown"] => BREAKDOWN_BUDGET,
                _ => BUDGET,
            };
            if size > budget {
                over.push(format!("{what}: {size} B > {budget}"));
            }
            if size > largest.0 {
                largest = (size, what);
            }
        };
        for op in WHOLE {
            let mut args = op.to_vec();
            args.push(&run);
            check(args);
        }
        let top = project.json(&["analyze", "hotspots", &run, "--limit", "1"]);
        if let Some(frame) = top["rows"][0]["frame"].as_str() {
            for op in FROM_FRAME {
                let mut args = op.to_vec();
                args.push(&run);
                args.push(frame);
                check(args);
            }
        }
    }
    eprintln!(
        "{imported} corpus traces; largest answer {} B ({})",
        largest.0, largest.1
    );
    assert!(imported >= 30, "only {imported} corpus traces imported");
    assert!(over.is_empty(), "answers over budget:\n{}", over.join("\n"));
}

/// A default page cut to the budget says so, and its cursor continues at
/// the first row it left out (the same rows as one longer page); without a
/// cursor (gpu-summary) the note says to pass a larger limit.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_page_cut_to_the_budget_continues_where_it_stops() {
    let project = Project::new();
    let path = corpus().join("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let run = project.json(&["import", path.to_str().expect("utf-8 path")])["run_id"]
        .as_str()
        .expect("run_id")
        .to_owned();
    let first = project.json(&["analyze", "hotspots", &run]);
    let returned = first["rows"].as_array().map_or(0, Vec::len);
    assert!((1..20).contains(&returned), "{returned} rows: {first}");
    assert!(compact_size(&first) <= BUDGET, "{}", compact_size(&first));
    let note = first["budget"]["note"].as_str().expect("budget note");
    assert!(note.contains("next_cursor"), "{note}");
    let cursor = first["next_cursor"].as_str().expect("next_cursor");
    let second = project.json(&["analyze", "hotspots", &run, "--cursor", cursor]);
    let whole = project.json(&["analyze", "hotspots", &run, "--limit", "40"]);
    assert!(
        whole.get("budget").is_none(),
        "an explicit limit is not cut"
    );
    let frames = |v: &Value| -> Vec<String> {
        v["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["frame"].as_str().map(str::to_owned))
            .collect()
    };
    let mut paged = frames(&first);
    paged.extend(frames(&second));
    let longer = frames(&whole);
    assert_eq!(paged[..], longer[..paged.len()]);
    // No cursor in gpu-summary: the note asks for a larger limit instead.
    let summary = project.json(&["analyze", "gpu-summary", &run]);
    let note = summary["budget"]["note"].as_str().expect("budget note");
    assert!(note.contains("pass limit"), "{note}");
    // A person's table is not cut.
    let table = project.run(&["analyze", "gpu-summary", &run]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("showing 20 of"));
}
