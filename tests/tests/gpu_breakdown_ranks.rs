//! `analyze gpu-breakdown` over many ranks: past 8 artifacts the answer
//! keeps the rows of the 4 most idle ranks and the spread of every measure
//! over all ranks; the test recomputes both from the full rows of every
//! rank (asked for by `ranks`) of a generated 12-rank job. Named ranks
//! come back in full, an absent rank is a typed refusal naming the ranks
//! there are, and a 64-rank answer stays a small fraction of the full one.

use std::collections::BTreeMap;
use std::path::Path;

use flameox_tests::Project;
use serde_json::{Value, json};

fn write_job(dir: &Path, ranks: u64, events: u64) {
    flameox_tests::write_kineto_job(dir, ranks, events, 5);
}

fn import_job(project: &Project, ranks: u64, events: u64) -> String {
    let job = project.path().join("job");
    std::fs::create_dir(&job).expect("job");
    write_job(&job, ranks, events);
    let imported = project.json(&["import", job.to_str().expect("utf8")]);
    imported["run_id"].as_str().expect("run").to_owned()
}

/// `analyze gpu-breakdown RUN [--ranks r]…` as JSON.
fn breakdown(project: &Project, run: &str, ranks: &[u64]) -> Value {
    let mut args = vec![
        "analyze".to_owned(),
        "gpu-breakdown".to_owned(),
        run.to_owned(),
    ];
    for r in ranks {
        args.extend(["--ranks".to_owned(), r.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    project.json(&args)
}

/// Per rank: idle share of the device span, summed over its devices.
fn idle_pct_by_rank(full: &Value) -> BTreeMap<i64, f64> {
    let mut sums: BTreeMap<i64, (f64, f64)> = BTreeMap::new();
    for row in full["temporal"].as_array().expect("temporal") {
        let entry = sums.entry(row["rank"].as_i64().expect("rank")).or_default();
        entry.0 += row["idle_ns"].as_f64().expect("idle");
        entry.1 += row["span_ns"].as_f64().expect("span");
    }
    sums.into_iter()
        .map(|(rank, (idle, span))| (rank, idle * 100.0 / span))
        .collect()
}

/// The distinct ranks a section's rows belong to, sorted.
fn ranks_of(rows: &Value) -> Vec<i64> {
    let mut ranks: Vec<i64> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["rank"].as_i64().expect("rank"))
        .collect();
    ranks.sort();
    ranks.dedup();
    ranks
}

#[test]
fn many_ranks_keep_the_stragglers_and_the_spread_of_every_rank() {
    let project = Project::new();
    let run = import_job(&project, 12, 1_500);
    let all: Vec<u64> = (0..12).collect();
    let full = breakdown(&project, &run, &all);
    assert_eq!(full["ranks"]["chosen_by"], "requested");
    assert_eq!(full["ranks"]["artifacts_total"], 12);
    let idle = idle_pct_by_rank(&full);
    assert_eq!(idle.len(), 12);

    let digested = breakdown(&project, &run, &[]);
    let d = &digested["ranks"];
    assert_eq!(d["artifacts_total"], 12);
    assert_eq!(d["with_device_work"], 12);
    assert_eq!(d["chosen_by"], "idle_pct, highest first");
    // The 4 most idle ranks, recomputed from the full rows.
    let mut by_idle: Vec<(i64, f64)> = idle.iter().map(|(r, v)| (*r, *v)).collect();
    by_idle.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut stragglers: Vec<i64> = by_idle.iter().take(4).map(|(r, _)| *r).collect();
    stragglers.sort();
    let shown: Vec<i64> = d["shown"]
        .as_array()
        .expect("shown")
        .iter()
        .map(|r| r.as_str().expect("rank").parse().expect("number"))
        .collect();
    assert_eq!(shown, stragglers, "{d}");
    // The spread of idle_pct over all 12 ranks.
    let spread = &d["spread"]["idle_pct"];
    assert_eq!(spread["ranks"], 12);
    let (low, high) = (by_idle.last().expect("low"), by_idle.first().expect("high"));
    assert!((spread["min"].as_f64().expect("min") - low.1).abs() < 1e-9);
    assert!((spread["max"].as_f64().expect("max") - high.1).abs() < 1e-9);
    assert_eq!(spread["min_at"], low.0.to_string());
    assert_eq!(spread["max_at"], high.0.to_string());
    let mut values: Vec<f64> = idle.values().copied().collect();
    values.sort_by(f64::total_cmp);
    let median = (values[5] + values[6]) / 2.0;
    assert!((spread["median"].as_f64().expect("median") - median).abs() < 1e-9);
    for measure in ["compute_pct", "kernel_ns", "stream_idle_ns", "span_ns"] {
        assert_eq!(d["spread"][measure]["ranks"], 12, "{measure}: {d}");
    }
    // No communication kernels: every rank at 0, no rank named at an end.
    let none = &d["spread"]["communication_pct"];
    assert_eq!(
        (none["min"].as_f64(), none["max"].as_f64()),
        (Some(0.0), Some(0.0))
    );
    assert_eq!(
        (&none["min_at"], &none["max_at"]),
        (&json!("all"), &json!("all"))
    );
    // Every section keeps exactly the shown ranks' rows, as the full answer has them.
    for section in [
        "temporal",
        "idle",
        "overlap",
        "bandwidth",
        "kernels",
        "launches",
    ] {
        assert_eq!(
            ranks_of(&digested[section]),
            stragglers,
            "{section} rows are the shown ranks'"
        );
        let expected: Vec<&Value> = full[section]
            .as_array()
            .expect("rows")
            .iter()
            .filter(|r| stragglers.contains(&r["rank"].as_i64().expect("rank")))
            .collect();
        let got: Vec<&Value> = digested[section].as_array().expect("rows").iter().collect();
        assert_eq!(got, expected, "{section}");
    }
    assert_eq!(digested["artifacts"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        digested["targets"][0]["artifact_ids"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    // The handed call shows the least idle rank in full.
    let next = &d["next"][0];
    assert_eq!(next["operation"], "analyze_gpu_breakdown");
    assert_eq!(next["arguments"]["ranks"], json!([low.0]));

    // Named ranks, in full; an absent one is refused naming the ranks there are.
    let two = breakdown(&project, &run, &[3, 7]);
    assert_eq!(ranks_of(&two["temporal"]), vec![3, 7]);
    assert_eq!(two["ranks"]["shown"], json!(["3", "7"]));
    let refused = project.json_err(
        &["analyze", "gpu-breakdown", &run, "--ranks", "40"],
        "INVALID_ARGUMENTS",
        2,
    );
    let message = refused["message"].as_str().unwrap_or("");
    assert!(message.contains("0..=11 (12 ranks)"), "{message}");
    // The terminal shows the spread and the next command.
    let out = project.run(&["analyze", "gpu-breakdown", &run]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("spread over all ranks"), "{text}");
    assert!(
        text.contains(&format!(
            "next: flameox analyze gpu-breakdown {run} --ranks {}",
            low.0
        )),
        "{text}"
    );
}

#[test]
fn a_sixty_four_rank_answer_stays_small_and_eight_ranks_stay_whole() {
    let project = Project::new();
    let run = import_job(&project, 64, 600);
    let digested = breakdown(&project, &run, &[]);
    let bytes = serde_json::to_vec(&digested).expect("json").len();
    let all: Vec<u64> = (0..64).collect();
    let full = breakdown(&project, &run, &all);
    let full_bytes = serde_json::to_vec(&full).expect("json").len();
    assert_eq!(digested["ranks"]["spread"]["idle_pct"]["ranks"], 64);
    assert!(
        bytes * 8 < full_bytes && bytes < 40_000,
        "digested {bytes} bytes, full {full_bytes}"
    );
    // Every analysis's scope lists 20 of the 64 artifacts, says how many
    // there are, and names the call that pages them (the breakdown's
    // `targets` name only the ranks it shows).
    for analysis in [
        vec!["analyze", "gpu-summary", run.as_str()],
        vec!["analyze", "gpu-gaps", run.as_str()],
        vec!["analyze", "hotspots", run.as_str()],
    ] {
        let answer = project.json(&analysis);
        let scope = &answer["scope"];
        assert_eq!(
            scope["artifact_ids"].as_array().map(Vec::len),
            Some(20),
            "{analysis:?}"
        );
        assert_eq!(scope["artifacts_total"], 64, "{analysis:?}");
        assert_eq!(scope["more_artifacts"]["operation"], "list_artifacts");
        assert_eq!(scope["more_artifacts"]["arguments"]["run"], run.as_str());
    }

    let few = Project::new();
    let run = import_job(&few, 8, 600);
    let whole = breakdown(&few, &run, &[]);
    assert!(whole.get("ranks").is_none(), "{whole}");
    assert_eq!(ranks_of(&whole["temporal"]), (0..8).collect::<Vec<i64>>());
}
