//! Experiment plans and runs through the real CLI: plans are deterministic
//! randomized complete blocks and write nothing; `max_trials` refuses with
//! the count; failing and timed-out trials are kept (the rest still run, the
//! timed-out tree is gone); Ctrl-C cancels the experiment and keeps the
//! finished trials; an ambiguous trial id is refused with its candidates;
//! warmup trials stay out of the frozen run sets.

use std::collections::BTreeSet;
use std::process::Stdio;

use flameox_tests::Project;
use flameox_tests::workloads::{assert_tree_gone, wait_for_pids};
use serde_json::Value;

/// `mode = ok` prints, `fail` exits 3, `hang` starts a sleeping grandchild,
/// writes both pids and sleeps.
const WORKLOAD: &str = r#"
[workloads.mixed]
argv = ["python3", "-c", "import os, subprocess, sys, time\nmode = sys.argv[1]\nif mode == 'fail':\n    sys.exit(3)\nif mode == 'hang':\n    k = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n    open('pids.txt', 'w').write(f'{{os.getpid()}} {{k.pid}}')\n    time.sleep(120)\nprint('ok', sys.argv[2])", "{mode}", "{n}"]
timeout_seconds = {timeout}
parameters = { mode = ["ok", "fail", "hang"], n = [1, 2, 3], tag = ["a", "b"] }
"#;

fn project(timeout: f64, experiment: &str) -> Project {
    let project = Project::new();
    let config = WORKLOAD.replace("{timeout}", &timeout.to_string()) + experiment;
    std::fs::write(project.path().join("flameox.toml"), config).unwrap();
    project
}

fn experiment(name: &str, variants: &str, extra: &str) -> String {
    format!(
        "\n[experiments.{name}]\nworkload = \"mixed\"\nvariants = {variants}\n{extra}\nseed = 11\nprimary_metric = \"wall_time\"\npolarity = \"lower_is_better\"\npractical_threshold = 0.05\nconfidence_level = 0.95\n"
    )
}

const OK_VARIANTS: &str = r#"{ second = { tag = "b" }, first = { tag = "a" } }"#;

fn trials(project: &Project, id: &str) -> Vec<Value> {
    project.json(&["experiment", "trials", id])["trials"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn plans_are_seeded_complete_blocks_and_write_nothing() {
    let scaled =
        "scaling = { parameter = \"n\", values = [1, 2, 3] }\nrepetitions = 4\nwarmups = 1";
    let project = project(30.0, &experiment("grid", OK_VARIANTS, scaled));
    let records = project.path().join(".flameox/records");
    let before = std::fs::read_dir(&records).map(|d| d.count()).unwrap_or(0);
    let plan = project.json(&["experiment", "plan", "grid", "--param", "mode=ok"]);
    let again = project.json(&["experiment", "plan", "grid", "--param", "mode=ok"]);
    assert_eq!(plan, again, "same seed, same plan");
    assert_eq!(
        std::fs::read_dir(&records).map(|d| d.count()).unwrap_or(0),
        before
    );
    assert_eq!(
        plan["baseline_variant"], "second",
        "the first declared variant"
    );
    assert_eq!(plan["cells"], 6);
    assert_eq!(plan["trial_count"], 30);
    let trials = plan["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 30);
    let cell = |t: &Value| format!("{}/{}", t["variant"], t["parameters"]["n"]);
    // Warmups first: every cell once, marked, without a block.
    for t in &trials[..6] {
        assert_eq!(t["warmup"], true);
        assert!(t["block"].is_null());
    }
    let mut orders = Vec::new();
    for block in 0..4 {
        let members: Vec<&Value> = trials[6 + block * 6..12 + block * 6].iter().collect();
        assert!(
            members
                .iter()
                .all(|t| t["block"] == block as u64 && t["warmup"] == false)
        );
        let cells: BTreeSet<String> = members.iter().map(|t| cell(t)).collect();
        assert_eq!(cells.len(), 6, "block {block} holds every cell once");
        assert!(
            members.iter().all(|t| t["parameters"]["mode"] == "ok"),
            "the override applies"
        );
        orders.push(members.iter().map(|t| cell(t)).collect::<Vec<_>>());
    }
    assert!(
        orders.windows(2).any(|w| w[0] != w[1]),
        "orders are shuffled per block"
    );
    // Another seed, another order; same cells.
    let text = std::fs::read_to_string(project.path().join("flameox.toml")).unwrap();
    std::fs::write(
        project.path().join("flameox.toml"),
        text.replace("seed = 11", "seed = 12"),
    )
    .unwrap();
    let other = project.json(&["experiment", "plan", "grid", "--param", "mode=ok"]);
    assert_ne!(other["trials"], plan["trials"]);
    assert_ne!(other["experiment_digest"], plan["experiment_digest"]);
    // Overriding a parameter the matrix sets is refused.
    project.json_err(
        &["experiment", "plan", "grid", "--param", "n=2"],
        "INVALID_ARGUMENTS",
        2,
    );
}

#[test]
fn over_budget_plans_are_refused_with_the_count() {
    let extra =
        "scaling = { parameter = \"n\", values = [1, 2, 3] }\nrepetitions = 5\nmax_trials = 20";
    let project = project(30.0, &experiment("big", OK_VARIANTS, extra));
    let err = project.json_err(&["experiment", "run", "big"], "QUERY_BUDGET_EXCEEDED", 5);
    assert_eq!(err["details"]["trial_count"], 30, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("30 trials"),
        "{err}"
    );
    assert!(
        !project.path().join(".flameox/records/experiments").exists(),
        "nothing ran"
    );
}

#[test]
fn failing_and_timed_out_trials_are_kept_and_the_rest_still_run() {
    let variants =
        r#"{ good = { mode = "ok" }, bad = { mode = "fail" }, stuck = { mode = "hang" } }"#;
    // 5 s: every trial starts Python under this limit, not only the stuck
    // one, and a loaded CI machine can take seconds to start one.
    let project = project(5.0, &experiment("mixed_run", variants, "repetitions = 2"));
    let view = project.json(&["experiment", "run", "mixed_run"]);
    assert_eq!(view["status"], "completed", "{view}");
    let counts = &view["outcome"]["counts"];
    assert_eq!(counts["attempted"], 6);
    assert_eq!(counts["completed"], 2);
    assert_eq!(counts["failed"], 2);
    assert_eq!(counts["timed_out"], 2);
    let id = view["experiment_id"].as_str().unwrap();
    for t in trials(&project, id) {
        let expected = match t["variant"].as_str().unwrap() {
            "good" => "completed",
            "bad" => "failed",
            _ => "timed_out",
        };
        assert_eq!(t["status"], expected, "{t}");
        assert!(
            t["run_id"].is_string(),
            "every attempted trial has its run: {t}"
        );
        if expected == "failed" {
            assert!(
                t["failure"].as_str().unwrap().contains("exit code 3"),
                "{t}"
            );
        }
    }
    assert_tree_gone(&project.path().join("pids.txt"));
    // Failed runs are in their variant's set, marked failed.
    let sets = view["outcome"]["run_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 3);
    assert_eq!(
        view["outcome"]["analyses"]["compare"],
        Value::Null,
        "3 variants: no default pair"
    );
}

#[test]
fn ctrl_c_cancels_the_experiment_and_keeps_finished_trials() {
    let variants = r#"{ good = { mode = "ok" }, stuck = { mode = "hang" } }"#;
    let project = project(
        120.0,
        &experiment("cancel_me", variants, "repetitions = 2\nwarmups = 1"),
    );
    let child = project
        .command(&["experiment", "run", "cancel_me", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pids = project.path().join("pids.txt");
    wait_for_pids(&pids);
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let body: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(body["code"], "PROCESS_CANCELLED");
    assert_tree_gone(&pids);
    let id = body["details"]["experiment_id"].as_str().unwrap();
    let shown = project.json(&["experiment", "show", id]);
    assert_eq!(shown["status"], "cancelled");
    let kept = trials(&project, id);
    assert_eq!(
        kept.len(),
        2,
        "the warmup of `good`, then the cancelled `stuck` warmup"
    );
    assert_eq!(kept[0]["status"], "completed");
    assert_eq!(kept[1]["status"], "cancelled");
    assert_eq!(shown["outcome"]["counts"]["planned"], 6);
}

#[test]
fn ambiguous_trial_ids_need_the_experiment_and_warmups_stay_out_of_run_sets() {
    let extra = "scaling = { parameter = \"n\", values = [1, 2] }\nrepetitions = 1\nwarmups = 1";
    let project = project(30.0, &experiment("twice", OK_VARIANTS, extra));
    let first = project.json(&["experiment", "run", "twice"]);
    let only = project.json(&["experiment", "trial", "t000001"]);
    assert_eq!(only["experiment_id"], first["experiment_id"]);
    assert_eq!(only["warmup"], true);
    let second = project.json(&["experiment", "run", "twice"]);
    let err = project.json_err(&["experiment", "trial", "t000001"], "INVALID_ARGUMENTS", 2);
    let candidates: BTreeSet<&str> = err["details"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let ids = [
        first["experiment_id"].as_str().unwrap(),
        second["experiment_id"].as_str().unwrap(),
    ];
    assert_eq!(candidates, ids.into_iter().collect());
    let scoped = project.json(&["experiment", "trial", "t000001", "--experiment-id", ids[1]]);
    assert_eq!(scoped["experiment_id"], ids[1]);
    // Warmups: 4 of 8 trials, none in a run set.
    let all = trials(&project, ids[1]);
    let warmup_runs: BTreeSet<String> = all
        .iter()
        .filter(|t| t["warmup"] == true)
        .map(|t| t["run_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(warmup_runs.len(), 4);
    let page = project.json(&["experiment", "trials", ids[1], "--limit", "3"]);
    assert_eq!(page["trials"].as_array().unwrap().len(), 3);
    let rest = project.json(&[
        "experiment",
        "trials",
        ids[1],
        "--cursor",
        page["next_cursor"].as_str().unwrap(),
    ]);
    assert_eq!(rest["trials"].as_array().unwrap().len(), 5);
    assert!(rest["next_cursor"].is_null());
    for set in second["outcome"]["run_sets"].as_array().unwrap() {
        assert_eq!(set["members"], 2);
        let record = project.json(&[
            "evidence",
            "get",
            &format!("run_set:{}", set["run_set_id"].as_str().unwrap()),
        ]);
        let members = record.to_string();
        assert!(
            warmup_runs.iter().all(|r| !members.contains(r.as_str())),
            "{record}"
        );
        assert!(members.contains("experiment_block"), "{record}");
    }
}
