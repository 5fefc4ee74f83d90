//! Third-party capture adapters (issue 46): a profiler installed from a
//! wheel into the project's virtualenv and declared in flameox.toml as
//! `[adapters.mini]`. Until prepare_adapter approves its exact identity
//! (distribution, version, content hash) list_capabilities names it in
//! setup_third_party_adapters and planning refuses it with the approving
//! call; approved, it captures a run whose profile is imported; a change
//! to its files invalidates the approval. A third-party adapter cannot take
//! a built-in adapter's name.

use crate::support::mcp::Session;
use flameox_tests::Project;
use serde_json::{Value, json};

/// Runs the workload, then writes a folded-stacks profile to its first
/// argument.
const MINI_PROFILER: &str = "#!/bin/sh\nout=\"$1\"; shift\n\"$@\"; status=$?\nprintf 'main;crunch 7\\nmain;idle 3\\n' > \"$out\"\nexit $status\n";

const CONFIG: &str = r#"
[workloads.app]
argv = ["python3", "-c", "print('hi')"]
timeout_seconds = 60

[adapters.mini]
program = ".venv/bin/mini-profiler"
command = ["{program}", "{profile}", "{argv}"]
profile = "profile.folded"
kind = "folded_stacks"
distribution = "mini-profiler"
"#;

fn mini(caps: &Value) -> Value {
    caps["adapters"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == "mini"))
        .cloned()
        .unwrap_or_else(|| panic!("no mini adapter in {caps}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_adapter_runs_only_with_its_exact_identity_approved() {
    let project = Project::new();
    let root = project.path();
    let wheels = tempfile::tempdir().expect("wheels");
    let script = wheels.path().join("mini.sh");
    std::fs::write(&script, MINI_PROFILER).expect("script");
    let build = std::process::Command::new("python3")
        .arg(flameox_tests::repo_root().join("tests/package_index/local_index.py"))
        .arg("build")
        .arg(wheels.path())
        .args(["mini-profiler", "1.0", "--script"])
        .arg(format!("mini-profiler={}", script.display()))
        .status()
        .expect("wheel");
    assert!(build.success());
    let venv = std::process::Command::new("python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(root)
        .status()
        .expect("venv");
    assert!(venv.success());
    let install = std::process::Command::new(root.join(".venv/bin/pip"))
        .args(["install", "--quiet", "--no-index", "--find-links"])
        .arg(wheels.path().join("mini-profiler"))
        .arg("mini-profiler")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .status()
        .expect("pip install");
    assert!(install.success());
    std::fs::write(root.join("flameox.toml"), CONFIG).expect("config");
    let mut s = Session::start(root, &[]).await;

    let caps = s.ok("list_capabilities", json!({})).await;
    let status = mini(&caps);
    assert_eq!(status["available"], false, "{status}");
    assert_eq!(status["provisioning"], "third_party_approval");
    assert_eq!(status["version"], "1.0");
    let action = &caps["setup_third_party_adapters"][0];
    assert_eq!(action["tool"], "prepare_adapter", "{caps}");
    assert_eq!(
        action["arguments"],
        json!({ "adapter": "mini", "distribution": "mini-profiler", "version": "1.0" })
    );
    let refused = s
        .err(
            "plan_capture",
            json!({ "workload_name": "app", "adapter": "mini" }),
            "CAPABILITY_UNAVAILABLE",
        )
        .await;
    assert_eq!(
        refused["recovery"]["next_tool"], "prepare_adapter",
        "{refused}"
    );
    s.err(
        "prepare_adapter",
        json!({ "adapter": "mini", "distribution": "mini-profiler", "version": "2.0" }),
        "REVISION_CONFLICT",
    )
    .await;

    let approved = s.ok("prepare_adapter", action["arguments"].clone()).await;
    assert_eq!(approved["identity"]["version"], "1.0", "{approved}");
    assert_eq!(
        approved["identity"]["content_sha256"]
            .as_str()
            .map(str::len),
        Some(64)
    );
    let caps = s.ok("list_capabilities", json!({})).await;
    assert_eq!(mini(&caps)["available"], true, "{caps}");
    assert_eq!(caps["setup_third_party_adapters"], json!([]));

    let plan = s
        .ok(
            "plan_capture",
            json!({ "workload_name": "app", "adapter": "mini" }),
        )
        .await;
    let run = s
        .ok(
            "execute_capture_plan",
            json!({ "plan_id": plan["plan_id"] }),
        )
        .await;
    assert_eq!(run["exit_code"], 0, "{run}");
    let profile = run["artifacts"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["role"] == "profile"))
        .unwrap_or_else(|| panic!("no profile in {run}"));
    assert_eq!(profile["kind"], "folded_stacks", "{run}");

    // A change to the distribution's files invalidates the approval.
    let program = root.join(".venv/bin/mini-profiler");
    let mut text = std::fs::read_to_string(&program).expect("program");
    text.push_str("# changed\n");
    std::fs::write(&program, text).expect("tamper");
    let caps = s.ok("list_capabilities", json!({})).await;
    let status = mini(&caps);
    assert_eq!(status["available"], false, "{status}");
    assert!(
        status["reason"].as_str().unwrap_or("").contains("changed"),
        "{status}"
    );
    s.err(
        "plan_capture",
        json!({ "workload_name": "app", "adapter": "mini" }),
        "CAPABILITY_UNAVAILABLE",
    )
    .await;
    s.close().await;

    // A built-in adapter's name cannot be declared again.
    std::fs::write(
        root.join("flameox.toml"),
        CONFIG.replace("[adapters.mini]", "[adapters.perf]"),
    )
    .expect("config");
    let out = project.run(&["workload", "status", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("adapters.perf"), "{text}");
}
