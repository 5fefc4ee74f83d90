//! The operation catalog (`engine/src/operations/`): each catalogued
//! operation exists in both transports with the same name and arguments,
//! and the new orientation operations answer real traces — the Chromium
//! page load's two `CrRendererMain` threads listed apart, a frame's worst
//! slices in one call, frames found by a piece of name.

use crate::support::mcp::Session;
use flameox_tests::{Project, corpus};
use serde_json::{Value, json};

const CHROMIUM: &str = "chrome_json/chromium_headless_page_devtools.json";

fn import(project: &Project, rel: &str) -> String {
    let out = project.json(&["import", corpus().join(rel).to_str().expect("utf-8 path")]);
    out["run_id"].as_str().expect("run_id").to_owned()
}

fn tools(project: &Project) -> Vec<Value> {
    let inspect = project.json(&["mcp", "inspect"]);
    inspect["tools"].as_array().cloned().unwrap_or_default()
}

#[test]
fn every_catalogued_operation_is_a_tool_and_a_command_with_the_same_arguments() {
    let project = Project::new();
    let tools = tools(&project);
    for op in flameox_engine::operations::catalog() {
        let tool = tools
            .iter()
            .find(|t| t["name"] == op.name)
            .unwrap_or_else(|| panic!("{} is not a tool", op.name));
        let schema = (op.schema)();
        assert_eq!(tool["inputSchema"], schema, "{}", op.name);
        assert_eq!(tool["title"], op.title);
        assert_eq!(
            tool["annotations"]["readOnlyHint"],
            op.group == flameox_engine::operations::Group::ReadOnly,
            "{}",
            op.name
        );
        // An operation only an agent's session completes (a plan id lives
        // in the server's memory) has a terminal equivalent instead.
        if !op.has_command() {
            let equivalent = match op.name {
                "execute_capture_plan" => ["capture", "run", "--help"],
                other => panic!("{other} has no command and no terminal equivalent"),
            };
            assert!(project.run(&equivalent).status.success(), "{}", op.name);
            continue;
        }
        // The command: the path, with every argument named in its help.
        let mut args: Vec<&str> = op.cli.to_vec();
        args.push("--help");
        let help = project.run(&args);
        assert!(help.status.success(), "{}: {:?}", op.name, help);
        let text = String::from_utf8_lossy(&help.stdout);
        for property in schema["properties"].as_object().expect("properties").keys() {
            // Only an agent's session fills it (a held plan id): the
            // command leaves it out, and must not show it.
            if flameox_engine::operations::SESSION_ONLY_ARGUMENTS
                .iter()
                .any(|(name, argument)| *name == op.name && argument == property)
            {
                let flag = format!("--{}", property.replace('_', "-"));
                assert!(!text.contains(&flag), "{}: {flag} shown", op.name);
                continue;
            }
            let global = flameox_engine::operations::SET_BY_GLOBAL_OPTION
                .iter()
                .find(|(name, argument, _)| *name == op.name && argument == property);
            let shown = if let Some((_, _, flag)) = global {
                // Set by a global option, listed under "Global options".
                format!("--{flag} ")
            } else if op.positional.contains(&property.as_str()) {
                format!("{}>", property.to_uppercase())
            } else {
                format!("--{}", property.replace('_', "-"))
            };
            // A positional is `<TARGET>` when required, `[TARGET]` when not.
            let shown_optional = shown.replace('>', "]");
            assert!(
                text.contains(&shown) || text.contains(&shown_optional),
                "{}: {shown} missing from\n{text}",
                op.name
            );
        }
        // The description's first clause, in the terminal's words (an
        // operation's MCP name reads as its command), however wrapped.
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut clause = op.description.split(';').next().unwrap_or("").to_owned();
        for other in flameox_engine::operations::catalog() {
            if other.has_command() && !clause.contains(&format!("{}_", other.name)) {
                clause = clause.replace(other.name, &format!("`flameox {}`", other.cli.join(" ")));
            }
        }
        assert!(
            words(&text).contains(&words(&clause)),
            "{}: {clause:?} missing from\n{text}",
            op.name
        );
    }
}

#[test]
fn the_generated_operations_table_is_current() {
    let page = std::fs::read_to_string(flameox_tests::repo_root().join("docs/operations.md"))
        .expect("docs/operations.md");
    let table = flameox_engine::operations::docs_table();
    assert!(
        page.contains(&table),
        "docs/operations.md is stale; its table should read:\n{table}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn threads_list_the_page_and_the_popup_main_threads_apart() {
    let project = Project::new();
    let run = import(&project, CHROMIUM);
    let out = project.json(&["threads", &run]);
    let rows = out["rows"].as_array().expect("rows");
    let mains: Vec<&Value> = rows
        .iter()
        .filter(|r| r["thread_name"] == "CrRendererMain")
        .collect();
    assert!(mains.len() >= 2, "{out}");
    assert_ne!(mains[0]["pid"], mains[1]["pid"]);
    assert_ne!(mains[0]["label"], mains[1]["label"]);
    // Each main thread says the page its renderer shows (the trace's own
    // navigationStart URLs): the page and the omnibox popup.
    let urls: Vec<&str> = mains.iter().filter_map(|r| r["url"].as_str()).collect();
    assert!(urls.contains(&"file:///tmp/chrome/page.html"), "{urls:?}");
    assert!(
        urls.iter().any(|u| u.starts_with("chrome://omnibox-popup")),
        "{urls:?}"
    );
    for r in &mains {
        let url = r["url"].as_str().unwrap_or("");
        assert!(r["label"].as_str().unwrap_or("").ends_with(url), "{r}");
    }
    // Busiest first by time not spent waiting, shares of the trace in
    // 0..=100, and the shared name said.
    let working: Vec<i64> = rows
        .iter()
        .map(|r| r["busy_ns"].as_i64().unwrap_or(-1) - r["waiting_ns"].as_i64().unwrap_or(0))
        .collect();
    assert!(working.windows(2).all(|w| w[0] >= w[1]), "{working:?}");
    for r in rows {
        let p = r["busy_pct_of_trace"].as_f64().expect("share");
        assert!((0.0..=100.0).contains(&p), "{r}");
    }
    let shared = out["shared_names"].as_array().expect("shared_names");
    let main = shared
        .iter()
        .find(|s| s["thread_name"] == "CrRendererMain")
        .expect("CrRendererMain is shared");
    assert!(main["threads"].as_array().map_or(0, Vec::len) >= 2);
    assert_eq!(out["returned"].as_u64(), Some(rows.len() as u64));
    assert!(out["total"].as_u64().unwrap_or(0) >= rows.len() as u64);
    // The default is 20 rows; a process filter keeps one process.
    assert!(rows.len() <= 20);
    let pid = mains[0]["pid"].as_i64().expect("pid").to_string();
    let one = project.json(&["threads", &run, "--process", &pid]);
    for r in one["rows"].as_array().expect("rows") {
        assert_eq!(r["pid"].as_i64().map(|p| p.to_string()), Some(pid.clone()));
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_sampled_profile_ranks_threads_by_samples() {
    let project = Project::new();
    let run = import(&project, "stacks/pyspy_workload.speedscope.json");
    let out = project.json(&["threads", &run]);
    let rows = out["rows"].as_array().expect("rows");
    assert!(!rows.is_empty(), "{out}");
    let samples: Vec<i64> = rows
        .iter()
        .map(|r| r["samples"].as_i64().unwrap_or(0))
        .collect();
    assert!(
        samples[0] > 0 && samples.windows(2).all(|w| w[0] >= w[1]),
        "{samples:?}"
    );
    let pct: f64 = rows
        .iter()
        .map(|r| r["samples_pct_of_scope"].as_f64().unwrap_or(0.0))
        .sum();
    assert!((pct - 100.0).abs() < 0.1, "{pct}");
    let text = project.run(&["threads", &run]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("most sampled"), "{text}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn instances_go_from_a_frame_to_its_longest_slices_and_find_frames_names_them() {
    let project = Project::new();
    let run = import(&project, CHROMIUM);
    let found = project.json(&["stacks", "find", &run, "parsehtml"]);
    let first = &found["rows"][0];
    assert_eq!(first["function"], "ParseHTML", "{found}");
    assert_eq!(first["exact"], false, "case differs: {found}");
    let exact = project.json(&["stacks", "find", &run, "ParseHTML"]);
    assert_eq!(exact["exact_match"], true);

    let frame = first["frame"].as_str().expect("frame key");
    let out = project.json(&["stacks", "instances", &run, frame, "--limit", "5"]);
    let rows = out["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 5, "{out}");
    let total = out["total"].as_u64().expect("total");
    assert!(total > 5 && out["truncated"] == true);
    let durs: Vec<i64> = rows
        .iter()
        .map(|r| r["dur_ns"].as_i64().unwrap_or(0))
        .collect();
    assert!(durs.windows(2).all(|w| w[0] >= w[1]), "{durs:?}");
    assert_eq!(out["max_dur_ns"].as_i64(), Some(durs[0]));
    for r in rows {
        assert!(r["args"].as_str().map_or(0, str::len) <= 300, "{r}");
        assert!(r["tid"].is_i64() && r["thread_name"].is_string(), "{r}");
    }
    // In time order, and on one thread only.
    let tid = rows[0]["tid"].as_i64().expect("tid").to_string();
    let timed = project.json(&[
        "stacks",
        "instances",
        &run,
        "ParseHTML",
        "--order",
        "earliest",
        "--thread",
        &tid,
        "--limit",
        "50",
    ]);
    let ts: Vec<i64> = timed["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            assert_eq!(r["tid"].as_i64().map(|t| t.to_string()), Some(tid.clone()));
            r["ts_ns"].as_i64().unwrap_or(0)
        })
        .collect();
    assert!(
        !ts.is_empty() && ts.windows(2).all(|w| w[0] <= w[1]),
        "{ts:?}"
    );
    assert!(timed["total"].as_u64().unwrap_or(0) < total);
    // A name that is not a frame: exit 1 or 2 with the closest names.
    let missing = project.run(&["stacks", "instances", &run, "ParseHTMLX", "--json"]);
    assert!(!missing.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn the_operations_answer_over_mcp_as_on_the_command_line() {
    let project = Project::new();
    let run = import(&project, CHROMIUM);
    let cli = project.json(&["stacks", "instances", &run, "ParseHTML", "--limit", "3"]);
    let mut s = Session::start(project.path(), &[]).await;
    let mcp = s
        .ok(
            "get_frame_instances",
            json!({ "target": run, "frame": "ParseHTML", "limit": 3 }),
        )
        .await;
    assert_eq!(mcp["rows"], cli["rows"]);
    assert_eq!(mcp["total"], cli["total"]);
    let threads = s
        .ok("list_threads", json!({ "target": run, "limit": 2 }))
        .await;
    assert_eq!(threads["returned"], 2);
    // A misspelled argument is refused with the valid names.
    let err = s
        .err(
            "list_threads",
            json!({ "run_id": run }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert!(err.to_string().contains("target"), "{err}");
    // ... by meaning, with the corrected call as the recovery (a tool call,
    // not a command line).
    assert_eq!(err["recovery"]["next_tool"], "list_threads", "{err}");
    assert_eq!(
        err["recovery"]["next_arguments"],
        json!({ "target": run }),
        "{err}"
    );
    assert!(err["recovery"].get("next_command").is_none(), "{err}");
    s.close().await;
}

/// Callers, callees and examples accept a thread scope: a tid keeps one
/// thread, a shared name merges and lists its threads, the scoped weights
/// never exceed the whole target's, and the scoped callers agree with a
/// model built from the scoped example stacks.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn drill_downs_take_a_thread_scope_and_say_which_threads_they_merged() {
    let project = Project::new();
    let run = import(&project, CHROMIUM);
    let hot = project.json(&[
        "analyze",
        "hotspots",
        &run,
        "--thread",
        "CrRendererMain",
        "--limit",
        "10",
    ]);
    // The heaviest frame that has a caller (RunTask is a root).
    let row = hot["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["function"] != "RunTask")
        .expect("a frame under RunTask");
    let frame = row["frame"].as_str().expect("frame").to_owned();
    let threads = project.json(&["threads", &run]);
    let main_tid = threads["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["thread_name"] == "CrRendererMain")
        .and_then(|r| r["tid"].as_i64())
        .expect("a renderer main thread")
        .to_string();

    let whole = project.json(&["stacks", "callers", &run, &frame, "--limit", "1000"]);
    assert!(whole.get("threads").is_none(), "{whole}");
    let one = project.json(&[
        "stacks", "callers", &run, &frame, "--thread", &main_tid, "--limit", "1000",
    ]);
    let listed = one["threads"].as_array().expect("threads");
    assert_eq!(listed.len(), 1, "{one}");
    assert!(
        listed[0]
            .as_str()
            .is_some_and(|t| t.contains(&format!("tid {main_tid}")))
    );
    let merged = project.json(&[
        "stacks",
        "callers",
        &run,
        &frame,
        "--thread",
        "CrRendererMain",
        "--limit",
        "1000",
    ]);
    assert!(
        merged["threads"].as_array().map_or(0, Vec::len) >= 2,
        "{merged}"
    );

    // One thread's caller weights: at most the whole target's, and equal to
    // the weights of its example stacks summed per distinct caller.
    let weight_of = |answer: &Value, key: &str| -> i64 {
        answer["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["frame"] == key)
            .map(|r| r["weight"].as_i64().unwrap_or(0))
            .sum()
    };
    let examples = project.json(&[
        "stacks", "examples", &run, &frame, "--thread", &main_tid, "--limit", "1000",
    ]);
    assert_eq!(examples["threads"], one["threads"]);
    let function = row["function"].as_str().expect("function");
    let mut model: std::collections::BTreeMap<String, i64> = Default::default();
    for stack in examples["stacks"].as_array().expect("stacks") {
        let frames: Vec<&str> = stack["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in frames.iter().enumerate() {
            if *f == function && i > 0 && seen.insert(frames[i - 1]) {
                *model.entry(frames[i - 1].to_owned()).or_default() +=
                    stack["weight"].as_i64().unwrap_or(0);
            }
        }
    }
    let mut got: std::collections::BTreeMap<String, i64> = Default::default();
    for r in one["rows"].as_array().expect("rows") {
        *got.entry(r["function"].as_str().unwrap_or("").to_owned())
            .or_default() += r["weight"].as_i64().unwrap_or(0);
        let key = r["frame"].as_str().expect("key");
        assert!(
            r["weight"].as_i64() <= Some(weight_of(&whole, key)),
            "{key}: scoped weight above the whole target's"
        );
    }
    assert_eq!(got, model);
    assert!(!got.is_empty(), "{one}");

    // A thread that is not there is refused with the call that lists threads.
    let err = project.json_err(
        &[
            "stacks",
            "callers",
            &run,
            &frame,
            "--thread",
            "NoSuchThread",
        ],
        "INVALID_ARGUMENTS",
        2,
    );
    assert!(err.to_string().contains("list_threads"), "{err}");
}

/// `phase` scopes hotspots and a frame's instances to the phase's host span: the window is the
/// `ProfilerStep#10` slice as the trace file writes it, the rows are those
/// of the same explicit window, and a phase that is not there names the
/// one that is.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn phase_scopes_hotspots_and_instances_to_the_phase_host_span() {
    let project = Project::new();
    let rel = "kineto/param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json";
    let run = import(&project, rel);
    // The oracle: the step's own complete event in the file (µs → ns).
    let text = std::fs::read_to_string(corpus().join(rel)).expect("trace");
    let trace: Value = serde_json::from_str(&text).expect("json");
    let step = trace["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["name"] == "ProfilerStep#10" && e["ph"] == "X")
        .expect("ProfilerStep#10");
    let start = step["ts"].as_i64().expect("ts") * 1000;
    let end = start + step["dur"].as_i64().expect("dur") * 1000;
    let scoped = project.json(&["analyze", "hotspots", &run, "--phase", "ProfilerStep#10"]);
    assert_eq!(
        scoped["phase"]["start_ns"].as_i64(),
        Some(start),
        "{}",
        scoped["phase"]
    );
    assert_eq!(scoped["phase"]["end_ns"].as_i64(), Some(end));
    let (s, e) = (start.to_string(), end.to_string());
    let windowed = project.json(&[
        "analyze",
        "hotspots",
        &run,
        "--start-ns",
        &s,
        "--end-ns",
        &e,
    ]);
    assert_eq!(scoped["rows"], windowed["rows"]);
    let whole = project.json(&["analyze", "hotspots", &run]);
    assert!(scoped["total_self"].as_i64() < whole["total_self"].as_i64());
    let err = project.json_err(
        &["analyze", "hotspots", &run, "--phase", "ProfilerStep#12"],
        "INVALID_ARGUMENTS",
        2,
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("ProfilerStep#10"),
        "{err}"
    );
    project.json_err(
        &[
            "analyze",
            "hotspots",
            &run,
            "--phase",
            "ProfilerStep#10",
            "--start-ns",
            &s,
            "--end-ns",
            &e,
        ],
        "INVALID_ARGUMENTS",
        2,
    );
    // A frame's slices in the phase: the same rows as in its window.
    let frame = "cudaLaunchKernel";
    let in_phase = project.json(&[
        "stacks",
        "instances",
        &run,
        frame,
        "--phase",
        "ProfilerStep#10",
        "--limit",
        "50",
    ]);
    let in_window = project.json(&[
        "stacks",
        "instances",
        &run,
        frame,
        "--start-ns",
        &s,
        "--end-ns",
        &e,
        "--limit",
        "50",
    ]);
    assert_eq!(in_phase["phase"]["start_ns"].as_i64(), Some(start));
    assert_eq!(in_phase["rows"], in_window["rows"]);
    assert!(in_phase["total"].as_u64().unwrap_or(0) > 0, "{in_phase}");
}
