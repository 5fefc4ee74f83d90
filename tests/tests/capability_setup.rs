//! Capability setup and workload dependencies end to end (issue 46), over
//! the real MCP server and a package index on loopback built in the test:
//! - a machine without py-spy lists it in setup_adapters; the setup
//!   creates the managed runtime, installs the pinned wheel, verifies it by
//!   its version probe, and list_capabilities(mode=active_refresh) shows it
//!   verified; the same key reconnects and installs nothing;
//! - an install the index cannot satisfy, a wheel whose program prints the
//!   wrong version, and a cancel each end with the runtime they created
//!   removed and a fresh-key retry; on a runtime that existed before, a
//!   failed setup removes only the distribution it added;
//! - a workload that declares a missing distribution: the plan's preflight
//!   names it, prepare_workload_dependencies installs it into the
//!   workload's virtualenv from the index, the next plan has no warning; a
//!   system interpreter is refused;
//! - the agent session: "profile this workload with py-spy" on a machine
//!   without py-spy, to a run and its headline, in 6 calls, with the setup
//!   and the capture detached and polled (the real py-spy binary, packed
//!   into a wheel on the loopback index).

use std::path::Path;

use crate::support::mcp::Session;
use flameox_tests::package_index::{LocalIndex, printing_script};
use flameox_tests::{Project, profilers_bin};
use serde_json::{Value, json};

/// Waits for a detached operation of `get_tool` to end (≤ 180 s).
async fn finished(s: &mut Session, get_tool: &str, operation_id: &str) -> Value {
    for _ in 0..6 {
        let got = s
            .ok(
                get_tool,
                json!({ "operation_id": operation_id, "wait_seconds": 30 }),
            )
            .await;
        if ["completed", "failed", "cancelled"].contains(&got["status"].as_str().unwrap_or("")) {
            return got;
        }
    }
    panic!("{operation_id} did not end within 180 s");
}

fn py_spy(caps: &Value) -> Value {
    caps["adapters"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == "py-spy"))
        .cloned()
        .unwrap_or_else(|| panic!("no py-spy adapter in {caps}"))
}

/// The pinned requirement list_capabilities offers for py-spy.
fn pinned(caps: &Value) -> (String, String) {
    let action = caps["setup_adapters"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["adapter"] == "py-spy"))
        .unwrap_or_else(|| panic!("py-spy is not in setup_adapters: {caps}"));
    assert_eq!(action["tool"], "start_capability_setup");
    let requirement = action["requirement"].as_str().expect("requirement");
    let (name, version) = requirement.split_once("==").expect("name==version");
    (name.to_owned(), version.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_installs_and_verifies_py_spy_and_rolls_back_what_fails() {
    let project = Project::new();
    let index = LocalIndex::start();
    let scratch = tempfile::tempdir().expect("scratch");
    let data = scratch.path().join("data");
    let env = index.server_env(&data, &["py-spy"]);
    let mut s = Session::start_with_env(project.path(), &[], &env).await;

    let caps = s.ok("list_capabilities", json!({})).await;
    assert_eq!(caps["mode"], "passive");
    let before = py_spy(&caps);
    assert_eq!(before["available"], false, "{before}");
    assert_eq!(before["setup_verification"], "pending");
    assert_eq!(before["provisioning"], "managed_runtime");
    let (name, version) = pinned(&caps);
    let good = printing_script(scratch.path(), "good", &format!("py-spy {version}"));
    index.add(&name, &version, &[("py-spy", &good)], &[]);

    let started = s
        .ok(
            "start_capability_setup",
            json!({ "idempotency_key": "setup-py-spy-1", "adapters": ["py-spy"] }),
        )
        .await;
    let op = started["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned();
    assert_eq!(started["reconnected"], false);
    let done = finished(&mut s, "get_capability_setup", &op).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["items"][0]["status"], "installed", "{done}");
    assert_eq!(
        done["receipt"]["verification"][0]["verified"], true,
        "{done}"
    );
    assert_eq!(done["receipt"]["runtime_created"], true);
    assert_eq!(done["next"]["tool"], "list_capabilities");
    let phases: Vec<&str> = done["progress"]
        .as_array()
        .expect("progress")
        .iter()
        .filter_map(|p| p["phase"].as_str())
        .collect();
    assert!(
        phases.ends_with(&[
            "validating_request",
            "installing_packages",
            "verifying",
            "completed"
        ]),
        "{phases:?}"
    );
    // The runtime's location is never shown to an agent.
    assert!(
        !done.to_string().contains(&data.display().to_string()),
        "{done}"
    );

    let refreshed = s
        .ok("list_capabilities", json!({ "mode": "active_refresh" }))
        .await;
    let after = py_spy(&refreshed);
    assert_eq!(after["available"], true, "{after}");
    assert_eq!(after["provisioning"], "managed_runtime");
    assert_eq!(after["setup_verification"], "actively_verified");
    assert_eq!(after["version"], version.as_str());
    assert!(
        refreshed["setup_adapters"]
            .as_array()
            .expect("list")
            .is_empty()
    );
    let cached = s
        .ok("list_capabilities", json!({ "mode": "active_cached" }))
        .await;
    assert_eq!(py_spy(&cached)["setup_verification"], "actively_verified");

    let again = s
        .ok(
            "start_capability_setup",
            json!({ "idempotency_key": "setup-py-spy-1", "adapters": ["py-spy"] }),
        )
        .await;
    assert_eq!(again["reconnected"], true);
    assert_eq!(again["operation_id"], op.as_str());
    let ops = std::fs::read_dir(project.path().join(".flameox/detached"))
        .expect("detached folder")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("op_"))
        })
        .count();
    assert_eq!(ops, 1, "the same key started a second operation");
    let err = s
        .err(
            "start_capability_setup",
            json!({ "idempotency_key": "setup-py-spy-1", "adapters": ["perf"] }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert!(err.to_string().contains("not installable"), "{err}");
    s.close().await;

    // An index with no matching version: the install fails, and the
    // runtime this setup created is removed.
    let missing = LocalIndex::start();
    index_has_only_other_version(&missing, &name, &good);
    let data2 = scratch.path().join("data2");
    let mut s = Session::start_with_env(
        project.path(),
        &[],
        &missing.server_env(&data2, &["py-spy"]),
    )
    .await;
    let op = start(&mut s, "setup-no-match-1").await;
    let failed = finished(&mut s, "get_capability_setup", &op).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let why = failed["error"]["message"].as_str().unwrap_or("");
    assert!(why.contains(&format!("{name}=={version}")), "{why}");
    assert!(why.contains("removed the managed runtime"), "{why}");
    assert_eq!(failed["items"][0]["status"], "rolled_back");
    assert_eq!(
        failed["retry_new_operation"]["tool"],
        "start_capability_setup"
    );
    assert!(
        !data2.join("runtime/venv").exists(),
        "the runtime was left behind"
    );

    // A wheel whose program prints another version fails verification.
    let liar = printing_script(scratch.path(), "liar", "py-spy 0.0.1");
    let lying = LocalIndex::start();
    lying.add(&name, &version, &[("py-spy", &liar)], &[]);
    let data3 = scratch.path().join("data3");
    s.close().await;
    let mut s =
        Session::start_with_env(project.path(), &[], &lying.server_env(&data3, &["py-spy"])).await;
    let op = start(&mut s, "setup-liar-1").await;
    let failed = finished(&mut s, "get_capability_setup", &op).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let why = failed["error"]["message"].as_str().unwrap_or("");
    assert!(
        why.contains("verification failed") && why.contains("0.0.1"),
        "{why}"
    );
    assert!(!data3.join("runtime/venv").exists());
    let caps = s.ok("list_capabilities", json!({})).await;
    assert_eq!(py_spy(&caps)["available"], false);
    s.close().await;

    // On a runtime that existed before, a failed setup removes only what
    // it added: the first runtime, py-spy taken out by hand, then the
    // lying wheel installed and rolled back.
    let python = data.join("runtime/venv/bin/python");
    let removed = std::process::Command::new(&python)
        .args(["-m", "pip", "uninstall", "--yes", "--quiet", &name])
        .status()
        .expect("pip uninstall");
    assert!(removed.success());
    let mut s =
        Session::start_with_env(project.path(), &[], &lying.server_env(&data, &["py-spy"])).await;
    let op = start(&mut s, "setup-liar-existing-1").await;
    let failed = finished(&mut s, "get_capability_setup", &op).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let why = failed["error"]["message"].as_str().unwrap_or("");
    assert!(
        why.contains(&format!("removed {name} from the managed runtime")),
        "{why}"
    );
    assert!(
        python.exists(),
        "the runtime that existed before was removed"
    );
    assert!(!data.join("runtime/venv/bin/py-spy").exists());

    // A cancel while the runtime is being created removes it.
    let data4 = scratch.path().join("data4");
    s.close().await;
    let mut s =
        Session::start_with_env(project.path(), &[], &index.server_env(&data4, &["py-spy"])).await;
    let op = start(&mut s, "setup-cancel-1").await;
    let cancelled = s
        .ok("cancel_capability_setup", json!({ "operation_id": op }))
        .await;
    let cancelled = if cancelled["status"] == "cancelled" {
        cancelled
    } else {
        finished(&mut s, "get_capability_setup", &op).await
    };
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(cancelled["cancellation"]["requested_at"].is_string());
    assert_eq!(
        cancelled["retry_new_operation"]["tool"],
        "start_capability_setup"
    );
    assert!(!data4.join("runtime/venv/bin/py-spy").exists());
    s.close().await;
}

async fn start(s: &mut Session, key: &str) -> String {
    let started = s
        .ok(
            "start_capability_setup",
            json!({ "idempotency_key": key, "adapters": ["py-spy"] }),
        )
        .await;
    started["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned()
}

fn index_has_only_other_version(index: &LocalIndex, name: &str, program: &Path) {
    index.add(name, "0.0.1", &[("py-spy", program)], &[]);
}

const DEPENDENT_WORKLOAD: &str = r#"
[workloads.app]
argv = [".venv/bin/python", "-c", "import definitely_not_installed_pkg as p; print('imported', p.__version__)"]
timeout_seconds = 60
requirements = { python_distributions = ["definitely-not-installed-pkg>=1.0"] }

[workloads.system]
argv = ["python3", "-c", "print(1)"]
timeout_seconds = 60
requirements = { python_distributions = ["definitely-not-installed-pkg>=1.0"] }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_declared_distribution_is_named_then_installed_from_the_index() {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), DEPENDENT_WORKLOAD).expect("config");
    let venv = std::process::Command::new("python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(project.path())
        .status()
        .expect("python3 -m venv");
    assert!(venv.success());
    let index = LocalIndex::start();
    index.add(
        "definitely-not-installed-pkg",
        "1.2",
        &[],
        &["definitely_not_installed_pkg"],
    );
    let scratch = tempfile::tempdir().expect("scratch");
    let env = index.server_env(&scratch.path().join("data"), &[]);
    let mut s = Session::start_with_env(project.path(), &[], &env).await;

    let plan = s
        .ok("plan_capture", json!({ "workload_name": "app" }))
        .await;
    let preflight = &plan["plan"]["preflight"];
    assert_eq!(preflight["status"], "active", "{plan}");
    assert_eq!(preflight["virtualenv"], true);
    assert_eq!(
        preflight["missing"],
        json!(["definitely-not-installed-pkg>=1.0"])
    );
    assert_eq!(preflight["distributions"][0]["note"], "not installed");
    let warnings = plan["plan"]["warnings"].to_string();
    assert!(
        warnings.contains("definitely-not-installed-pkg>=1.0"),
        "{warnings}"
    );
    assert_eq!(plan["next"]["tool"], "prepare_workload_dependencies");
    let passive = s
        .ok(
            "plan_capture",
            json!({ "workload_name": "app", "preflight_mode": "passive" }),
        )
        .await;
    assert_eq!(passive["plan"]["preflight"]["status"], "skipped");

    let prepared = s
        .ok(
            "prepare_workload_dependencies",
            json!({ "workload_name": "app" }),
        )
        .await;
    assert_eq!(
        prepared["installed"],
        json!(["definitely-not-installed-pkg>=1.0"]),
        "{prepared}"
    );
    assert_eq!(prepared["remaining"], json!([]));
    assert_eq!(
        prepared["preflight"]["distributions"][0]["installed_version"],
        "1.2"
    );
    assert_eq!(prepared["next"]["operation"], "plan_capture");

    let plan = s
        .ok("plan_capture", json!({ "workload_name": "app" }))
        .await;
    assert_eq!(plan["plan"]["warnings"], json!([]), "{plan}");
    assert_eq!(plan["plan"]["preflight"]["missing"], json!([]));
    assert_eq!(plan["next"]["tool"], "execute_capture_plan");
    let run = s
        .ok(
            "execute_capture_plan",
            json!({ "plan_id": plan["plan_id"] }),
        )
        .await;
    assert_eq!(run["exit_code"], 0, "{run}");

    // Nothing is installed into an interpreter that is not a virtualenv.
    let refused = s
        .err(
            "prepare_workload_dependencies",
            json!({ "workload_name": "system" }),
            "EXECUTION_REFUSED",
        )
        .await;
    assert!(
        refused.to_string().contains("not a virtualenv"),
        "{refused}"
    );
    s.close().await;
}

const BUSY_WORKLOAD: &str = r#"
[workloads.busy]
argv = ["python3", "-c", "import time\ndef crunch_numbers():\n    t = time.time()\n    n = 0\n    while time.time() - t < 2.5:\n        n += sum(i * i for i in range(500))\n    return n\nprint(crunch_numbers())"]
timeout_seconds = 120
"#;

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_profiles_with_py_spy_from_a_machine_without_it_in_six_calls() {
    let Some(bin) = profilers_bin(&["py-spy"]) else {
        return;
    };
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), BUSY_WORKLOAD).expect("config");
    let scratch = tempfile::tempdir().expect("scratch");
    let index = LocalIndex::start();
    let caps_probe = Project::new();
    let pinned_version = {
        let caps = caps_probe.json(&["capabilities"]);
        let requirement = caps["setup_adapters"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["adapter"] == "py-spy"))
            .and_then(|a| a["requirement"].as_str())
            .map(str::to_owned);
        // py-spy may be installed on this machine's PATH; the pin is the same.
        requirement
            .and_then(|r| r.split_once("==").map(|(_, v)| v.to_owned()))
            .unwrap_or_else(|| "0.4.3".to_owned())
    };
    index.add(
        "py-spy",
        &pinned_version,
        &[("py-spy", &bin.join("py-spy"))],
        &[],
    );
    let env = index.server_env(&scratch.path().join("data"), &["py-spy"]);
    let mut s = Session::start_with_env(project.path(), &[], &env).await;

    let caps = s.ok("list_capabilities", json!({})).await;
    let action = &caps["setup_adapters"][0];
    assert_eq!(action["adapter"], "py-spy", "{caps}");
    let mut arguments = action["arguments"].clone();
    arguments["idempotency_key"] = json!("agent-setup-py-spy");
    let setup = s
        .ok(action["tool"].as_str().expect("tool"), arguments)
        .await;
    let next = &setup["next"];
    let setup = s
        .ok(
            next["tool"].as_str().expect("tool"),
            next["arguments"].clone(),
        )
        .await;
    assert_eq!(setup["status"], "completed", "{setup}");
    let capture = s
        .ok(
            "start_detached_capture",
            json!({
                "idempotency_key": "agent-capture-busy",
                "workload_name": "busy",
                "adapter": "py-spy",
            }),
        )
        .await;
    let next = &capture["next"];
    let capture = s
        .ok(
            next["tool"].as_str().expect("tool"),
            next["arguments"].clone(),
        )
        .await;
    assert_eq!(capture["status"], "completed", "{capture}");
    let run_id = capture["run_id"].as_str().expect("run_id").to_owned();
    let next = &capture["next"];
    assert_eq!(next["tool"], "summarize_target");
    let summary = s.ok("summarize_target", next["arguments"].clone()).await;
    let calls = s.transcript.len();
    let bytes: usize = s.transcript.iter().map(String::len).sum();
    eprintln!("agent session: {calls} calls, {bytes} bytes of answers, run {run_id}");
    assert_eq!(calls, 6);
    let text = summary.to_string();
    assert!(
        text.contains("crunch_numbers"),
        "the headline misses the hot function: {text}"
    );
    s.close().await;
}
