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
/// The orientation call's own budget (it cuts itself to fit).
const SUMMARY_BUDGET: usize = 6 * 1024;

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
