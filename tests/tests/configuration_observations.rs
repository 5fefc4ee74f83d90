//! Configuration observations (issue 47; the seed's `analyze_execution`
//! reads "configuration observations"): every capture records the machine,
//! the project's git commit and dirty state, the workload interpreter's
//! version and packages, and the declared environment, before the workload
//! starts; `analyze execution` shows them with the run's wall time, CPU
//! time and peak RSS, and with `--compare` both runs' resources and the
//! fields that changed between them. Checked against the project's own
//! git state and the interpreter's own answers.

use std::process::Command;

use flameox_tests::Project;

const CONFIG: &str = r#"
[workloads.env]
argv = ["python3", "-c", "import os; print(os.environ['MODE'])"]
timeout_seconds = 60
environment = { MODE = "{mode}" }
parameters = { mode = ["fast", "slow"] }
"#;

fn git(project: &Project, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(project.path())
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn captures_record_the_configuration_and_compare_names_what_changed() {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), CONFIG).expect("config");
    // A checkout when git is installed: its commit, then a dirty tree.
    let commit = git(&project, &["init", "-q"])
        .and_then(|_| git(&project, &["add", "flameox.toml"]))
        .and_then(|_| git(&project, &["commit", "-q", "-m", "first"]))
        .and_then(|_| git(&project, &["rev-parse", "HEAD"]));
    let first = project.json(&["capture", "run", "env", "--parameters", "mode=fast"]);
    let base = first["result"]["run_id"].as_str().expect("run").to_owned();
    if commit.is_some() {
        let edited = format!("{CONFIG}\n# edited\n");
        std::fs::write(project.path().join("flameox.toml"), edited).expect("edit");
    }
    let second = project.json(&["capture", "run", "env", "--parameters", "mode=slow"]);
    let target = second["result"]["run_id"].as_str().expect("run").to_owned();

    let shown = project.json(&["analyze", "execution", &target]);
    let c = &shown["configuration"];
    assert!(
        c["host"]["logical_cpus"].as_u64().unwrap_or(0) >= 1,
        "{shown}"
    );
    assert_eq!(c["host"]["os"], std::env::consts::OS, "{shown}");
    assert_eq!(c["environment"]["MODE"], "slow", "{shown}");
    let python = Command::new("python3")
        .args(["-c", "import platform; print(platform.python_version())"])
        .output()
        .expect("python3");
    let version = String::from_utf8_lossy(&python.stdout).trim().to_owned();
    assert!(
        c["interpreter"]
            .as_str()
            .unwrap_or_default()
            .ends_with(&version),
        "{shown} vs {version}"
    );
    assert!(c["packages"].as_u64().is_some(), "{shown}");
    assert_ne!(shown["evidence"]["status"], "unavailable", "{shown}");
    // The process's own resources, as its receipt recorded them.
    let wall = |run: &serde_json::Value| run["result"]["wall_time_ns"].as_f64();
    assert_eq!(
        shown["resources"]["wall_time_ns"].as_f64(),
        wall(&second),
        "{shown}"
    );
    assert!(
        shown["resources"]["peak_rss_bytes"].as_f64() > Some(0.0),
        "{shown}"
    );

    let compared = project.json(&["analyze", "execution", &target, "--compare", &base]);
    let changes = compared["compare"]["configuration_changes"]
        .as_array()
        .unwrap_or_else(|| panic!("{compared}"));
    let field = |name: &str| changes.iter().find(|c| c["field"] == name);
    let resources = compared["compare"]["resources"]
        .as_array()
        .expect("resources");
    let wall_delta = resources
        .iter()
        .find(|r| r["name"] == "wall_time")
        .unwrap_or_else(|| panic!("{compared}"));
    assert_eq!(wall_delta["base"].as_f64(), wall(&first), "{compared}");
    assert_eq!(wall_delta["target"].as_f64(), wall(&second), "{compared}");
    assert_eq!(wall_delta["unit"], "ns");
    let mode = field("environment.MODE").unwrap_or_else(|| panic!("{compared}"));
    assert_eq!(
        (mode["base"].as_str(), mode["target"].as_str()),
        (Some("fast"), Some("slow"))
    );
    if let Some(commit) = commit {
        assert_eq!(c["git"]["commit"], commit.as_str(), "{shown}");
        assert_eq!(c["git"]["dirty"], true, "{shown}");
        let dirty = field("git.dirty").unwrap_or_else(|| panic!("{compared}"));
        assert_eq!(
            (dirty["base"].as_str(), dirty["target"].as_str()),
            (Some("false"), Some("true"))
        );
    }
    assert!(
        field("host.logical_cpus").is_none(),
        "same machine: {compared}"
    );
    let summary = String::from_utf8_lossy(
        &project
            .run(&["analyze", "execution", &target, "--compare", &base])
            .stdout,
    )
    .into_owned();
    assert!(
        summary.contains("environment.MODE: fast → slow"),
        "{summary}"
    );
}
