//! Query budgets hold: a memory pool too small for a query and a deadline a
//! heavy query cannot meet both end in `QUERY_BUDGET_EXCEEDED` with the
//! budget, what was used and a narrower call — not an OOM, a panic or a
//! hang — in-process and through the binary, and the workspace is unchanged.
//! The memory budget exits 5; the deadline exits 8 (seed, "Exit codes":
//! "8: operation cancelled or timed out").

use std::time::{Duration, Instant};

use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_engine::services::QueryContext;
use flameox_engine::services::analyze::{HotspotsRequest, analyze_hotspots};
use flameox_engine::services::gpu::{AcceleratorRequest, accelerator_launches};
use flameox_engine::{ErrorCode, Workspace};
use flameox_tests::Project;
use serde_json::Value;

/// A project holding one imported generated Kineto trace.
struct Imported {
    project: Project,
    run_id: String,
    artifact_id: String,
    span: (i64, i64),
}

fn import_generated(events: u64) -> Imported {
    let project = Project::new();
    let trace = project.path().join("generated.pt.trace.json");
    let file = std::fs::File::create(&trace).unwrap();
    let spec = KinetoSpec {
        seed: 6,
        events,
        streams: 4,
        ops_per_step: 0,
    };
    write_kineto(&spec, std::io::BufWriter::new(file)).unwrap();
    let imported = project.json(&["import", trace.to_str().unwrap()]);
    let span = &imported["time_span_ns"];
    Imported {
        run_id: imported["run_id"].as_str().unwrap().to_owned(),
        artifact_id: imported["artifact_id"].as_str().unwrap().to_owned(),
        span: (span[0].as_i64().unwrap(), span[1].as_i64().unwrap()),
        project,
    }
}

impl Imported {
    fn workspace(&self) -> Workspace {
        Workspace::open(&self.project.path().join(".flameox")).unwrap()
    }

    fn whole_window(&self) -> [String; 4] {
        [
            "--start-ns".into(),
            self.span.0.to_string(),
            "--end-ns".into(),
            (self.span.1 + 1).to_string(),
        ]
    }

    /// `validate` passes, HEAD is `head` and staging is empty.
    fn assert_unchanged(&self, head: &Option<String>) {
        let report = self.project.json(&["validate"]);
        assert_eq!(report["ok"], true, "{report}");
        assert_eq!(&self.project.head(), head);
        assert_eq!(self.project.staging_entries(), 0);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// This process's peak resident set (VmHWM) and the machine's memory, bytes.
fn peak_rss_and_machine_memory() -> (u64, u64) {
    let kib = |file: &str, key: &str| -> u64 {
        let text = std::fs::read_to_string(file).unwrap();
        let line = text.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    };
    (
        kib("/proc/self/status", "VmHWM:"),
        kib("/proc/meminfo", "MemTotal:"),
    )
}

fn window_width(args: &Value) -> i64 {
    args["end_ns"].as_i64().unwrap() - args["start_ns"].as_i64().unwrap()
}

#[test]
fn a_memory_pool_too_small_for_the_query_is_a_budget_error_with_what_was_used() {
    let trace = import_generated(100_000);
    let head = trace.project.head();
    let launches = ["analyze", "pytorch", trace.run_id.as_str()];
    // Under the default budget the query answers.
    let answered = trace.project.json(&launches);
    assert!(answered["total"].as_u64().unwrap() > 0, "{answered}");

    let config_path = trace.project.path().join(".flameox/config.toml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    assert!(config.contains("memory_limit_mib = 2048"), "{config}");
    std::fs::write(
        &config_path,
        config.replace("memory_limit_mib = 2048", "memory_limit_mib = 1"),
    )
    .unwrap();

    let err = trace
        .project
        .json_err(&launches, "QUERY_BUDGET_EXCEEDED", 5);
    let details = &err["details"];
    assert_eq!(details["budget"], "memory", "{err}");
    assert_eq!(details["memory_budget_bytes"], 1024 * 1024);
    // What was used: what the pool held (maybe nothing yet), what the
    // refused allocation asked for, and the sum overran the budget.
    let held = details["memory_held_bytes"].as_u64().unwrap();
    let requested = details["memory_requested_bytes"].as_u64().unwrap();
    assert!(requested > 0, "{err}");
    assert_eq!(details["memory_needed_bytes"], held + requested);
    assert!(held + requested > 1024 * 1024, "{err}");
    assert!(details["memory_peak_bytes"].as_u64().unwrap() >= held);
    assert!(!details["memory_consumer"].as_str().unwrap().is_empty());
    // One artifact and no narrower call of pytorch: the advice says how
    // to narrow (accelerator-launches, which would name `--phase`, now
    // reads small reductions and fits in 1 MiB).
    let advice: Vec<&str> = err["remediation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(advice.iter().any(|r| r.contains("narrow")), "{err}");

    // In-process: the same typed error, and the process did not balloon.
    let ws = trace.workspace();
    assert_eq!(ws.config.query.memory_limit_mib, 1);
    let qc = QueryContext::new(&ws);
    let request = AcceleratorRequest {
        target: trace.run_id.clone(),
        ..Default::default()
    };
    let err = runtime()
        .block_on(accelerator_launches(&qc, &request))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::QueryBudgetExceeded, "{err:?}");
    assert_eq!(err.exit_code(), 5);
    let (peak_rss, machine) = peak_rss_and_machine_memory();
    assert!(
        peak_rss < (machine / 8).min(1 << 30),
        "peak RSS {peak_rss} of {machine}"
    );

    trace.assert_unchanged(&head);
    std::fs::write(&config_path, config).unwrap();
    assert_eq!(trace.project.json(&launches), answered);
}

#[test]
fn a_deadline_a_heavy_query_cannot_meet_stops_it_promptly() {
    let trace = import_generated(1_000_000);
    let head = trace.project.head();
    let ws = trace.workspace();
    let runtime = runtime();
    let request = HotspotsRequest {
        target: trace.run_id.clone(),
        start_ns: Some(trace.span.0),
        end_ns: Some(trace.span.1 + 1),
        ..Default::default()
    };

    // The whole query under the configured deadline, for comparison.
    let started = Instant::now();
    let full = runtime
        .block_on(analyze_hotspots(&QueryContext::new(&ws), &request))
        .unwrap();
    let full_time = started.elapsed();
    assert!(full.total > 0);

    let mut lowered = QueryContext::new(&ws);
    lowered.options.timeout = Some(Duration::from_millis(1));
    let started = Instant::now();
    let err = runtime
        .block_on(analyze_hotspots(&lowered, &request))
        .unwrap_err();
    let stopped_after = started.elapsed();
    eprintln!("whole query {full_time:?}; 1 ms deadline stopped it after {stopped_after:?}");
    assert_eq!(err.code, ErrorCode::QueryBudgetExceeded, "{err:?}");
    assert_eq!(err.details["budget"], "deadline");
    assert_eq!(err.details["deadline_ms"], 1);
    assert_eq!(err.details["configured_deadline_ms"], 60_000);
    assert!(err.details["elapsed_ms"].as_u64().unwrap() <= stopped_after.as_millis() as u64);
    // The query's own clock (from the budgeted run's start; opening the
    // session is outside the deadline and outside this figure), so one
    // scheduling stall of the test process does not decide the ratio.
    let elapsed_ms = err.details["elapsed_ms"].as_u64().unwrap();
    assert!(
        elapsed_ms * 4 < full_time.as_millis() as u64,
        "stopped after {elapsed_ms} ms ({stopped_after:?} in all); the whole query takes {full_time:?}"
    );
    assert!(err.remediation.iter().any(|r| r.contains("--timeout")));
    let recovery = err.recovery.clone().unwrap();
    assert_eq!(recovery.next_tool, "analyze_hotspots");
    assert!(window_width(&recovery.next_arguments) < trace.span.1 - trace.span.0);

    // A heavier recipe too; one artifact, so the advice is a phase.
    let err = runtime
        .block_on(accelerator_launches(
            &lowered,
            &AcceleratorRequest {
                target: trace.run_id.clone(),
                ..Default::default()
            },
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::QueryBudgetExceeded, "{err:?}");
    assert!(
        err.remediation.iter().any(|r| r.contains("a phase")),
        "{err:?}"
    );

    let (peak_rss, machine) = peak_rss_and_machine_memory();
    eprintln!("peak RSS {peak_rss} B of {machine} B");
    assert!(
        peak_rss < (machine / 8).min(1 << 30),
        "peak RSS {peak_rss} of {machine}"
    );

    // Through the binary: exit 5 and the JSON error, for hotspots and a window.
    let window = trace.whole_window();
    let err = trace.project.json_err(
        &[
            "--timeout",
            "0.001",
            "analyze",
            "hotspots",
            &trace.run_id,
            &window[0],
            &window[1],
            &window[2],
            &window[3],
        ],
        "QUERY_BUDGET_EXCEEDED",
        8,
    );
    assert_eq!(err["details"]["deadline_ms"], 1, "{err}");
    let start = trace.span.0.to_string();
    let end = (trace.span.1 + 1).to_string();
    let err = trace.project.json_err(
        &[
            "--timeout",
            "0.001",
            "trace",
            "window",
            &trace.artifact_id,
            "--start-ns",
            &start,
            "--end-ns",
            &end,
        ],
        "QUERY_BUDGET_EXCEEDED",
        8,
    );
    assert_eq!(err["recovery"]["next_tool"], "get_trace_window", "{err}");
    let narrowed_end = err["recovery"]["next_arguments"]["end_ns"]
        .as_i64()
        .unwrap();
    assert!(narrowed_end < trace.span.1, "{err}");

    trace.assert_unchanged(&head);
}
