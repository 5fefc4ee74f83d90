//! The seed's command spellings and record reads work from the terminal
//! (issue 47): `investigations show`, `hypotheses show` and `findings show`
//! (the seed's "Workload commands" and "Evidence commands"), with `get`
//! still accepted where an earlier build named it so; and `init` is
//! idempotent as the seed's `initialize_workspace` ("additive and
//! idempotent") says: a second call changes nothing.

use flameox_tests::Project;
use serde_json::Value;

fn id(v: &Value, key: &str) -> String {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {v}"))
        .to_owned()
}

#[test]
fn investigations_hypotheses_and_findings_are_shown_by_the_seeds_words() {
    let project = Project::new();
    let folded = project.path().join("p.folded");
    std::fs::write(&folded, "main;sort 9\nmain;io 1\n").expect("profile");
    let run = project.json(&["import", folded.to_str().expect("utf-8")]);
    let run_id = id(&run, "run_id");
    let inv = project.json(&["investigations", "create", "--question", "why is it slow?"]);
    let inv_id = id(&inv, "investigation_id");
    let hyp = project.json(&[
        "hypotheses",
        "record",
        "--investigation-id",
        &inv_id,
        "--statement",
        "sorting dominates",
        "--prediction",
        "sort is the top frame",
        "--refuted-if",
        "sort is under 10 %",
    ]);
    let hyp_id = id(&hyp, "hypothesis_id");
    let finding = project.json(&[
        "findings",
        "record",
        "--investigation-id",
        &inv_id,
        "--claim",
        "nothing measured yet",
        "--level",
        "observation",
        "--references",
        &format!("run:{run_id}"),
    ]);
    let finding_id = id(&finding, "finding_id");

    // Seed: "flameox investigations show <investigation-id>".
    let shown = project.json(&["investigations", "show", &inv_id]);
    assert_eq!(
        shown["investigation"]["question"], "why is it slow?",
        "{shown}"
    );
    assert_eq!(project.json(&["investigations", "get", &inv_id]), shown);
    // Seed: "flameox hypotheses show <hypothesis-id>".
    let h = project.json(&["hypotheses", "show", &hyp_id]);
    assert_eq!(h["statement"], "sorting dominates", "{h}");
    assert_eq!(h["status"], "proposed", "{h}");
    assert_eq!(h["investigation_id"], inv_id.as_str());
    // Seed: "flameox findings show <finding-id>".
    let f = project.json(&["findings", "show", &finding_id]);
    assert_eq!(f["claim"], "nothing measured yet", "{f}");
    assert_eq!(project.json(&["findings", "get", &finding_id]), f);
    // An unknown id is a typed error, not an empty record.
    let missing = project.run(&["hypotheses", "show", "hyp_missing", "--json"]);
    assert_ne!(missing.status.code(), Some(0), "{missing:?}");
}

#[test]
fn init_twice_changes_nothing_the_second_time() {
    let project = Project::new();
    let identity = project.path().join(".flameox/workspace.json");
    let before = std::fs::read(&identity).expect("workspace identity");
    let again = project.json(&["init"]);
    assert_eq!(
        std::fs::read(&identity).expect("identity"),
        before,
        "{again}"
    );
}

const SQUARE: &str = r#"
[workloads.square]
argv = ["python3", "-c", "import sys; n = int(sys.argv[1]); print(sum(i * i for i in range(n)))", "{n}"]
timeout_seconds = 60
parameters = { n = [1000, 2000] }
"#;

/// Seed: "flameox capture plan <adapter> --workload <name> [--parameters
/// '<json>'] [--adapter-options '<json>']" and "plan_capture accepts
/// preflight_mode='auto' and capture_mode='auto' by default … Use
/// capture_mode='managed' only when the project policy requires that
/// stronger guarantee; use capture_mode='trusted_local' to request the same
/// direct local execution explicitly".
#[test]
fn capture_commands_take_the_seeds_adapter_first_form_options_and_capture_mode() {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), SQUARE).expect("config");
    let seed = project.json(&[
        "capture",
        "plan",
        "process",
        "--workload",
        "square",
        "--parameters",
        r#"{"n": 2000}"#,
    ]);
    let plan = &seed["plan"];
    assert_eq!(plan["request"]["workload"], "square", "{seed}");
    assert_eq!(plan["request"]["adapter"], "process", "{seed}");
    assert_eq!(plan["argv"][3], "2000", "{seed}");
    let containment = plan["containment"].as_str().unwrap_or_default();
    assert!(
        containment.contains("capture_mode auto")
            && containment.contains("no enforced descendant containment"),
        "{containment}"
    );
    // The catalogued spelling gives the same plan.
    let same = project.json(&[
        "capture",
        "plan",
        "square",
        "--adapter",
        "process",
        "--parameters",
        "n=2000",
    ]);
    assert_eq!(same["plan"]["binding_digest"], plan["binding_digest"]);
    let explicit = project.json(&[
        "capture",
        "plan",
        "process",
        "--workload",
        "square",
        "--capture-mode",
        "trusted_local",
    ]);
    let text = explicit["plan"]["containment"].as_str().unwrap_or_default();
    assert!(text.starts_with("none: trusted_local —"), "{text}");
    assert_ne!(explicit["plan"]["binding_digest"], plan["binding_digest"]);
    let managed = project.json_err(
        &[
            "capture",
            "plan",
            "process",
            "--workload",
            "square",
            "--capture-mode",
            "managed",
        ],
        "CAPABILITY_UNAVAILABLE",
        3,
    );
    assert!(
        managed["remediation"][0]
            .as_str()
            .unwrap_or_default()
            .contains("trusted_local"),
        "{managed}"
    );
    // Options the adapter does not declare are refused, naming the field.
    let refused = project.json_err(
        &[
            "capture",
            "plan",
            "process",
            "--workload",
            "square",
            "--adapter-options",
            r#"{"rate": 1000}"#,
        ],
        "INVALID_ARGUMENTS",
        2,
    );
    assert_eq!(
        refused["details"]["fields"][0]["field"], "adapter_options.rate",
        "{refused}"
    );
    // capture run takes the same form and runs the workload.
    let run = project.json(&[
        "capture",
        "run",
        "process",
        "--workload",
        "square",
        "--capture-mode",
        "trusted_local",
    ]);
    assert_eq!(run["plan"]["request"]["workload"], "square", "{run}");
    assert_eq!(run["result"]["status"], "completed", "{run}");
}

/// With py-spy installed (the profilers virtualenv), the adapter's options
/// become its flags in the plan's exact command.
#[test]
fn py_spy_options_become_its_flags_in_the_plan() {
    let Some(bin) = flameox_tests::profilers_bin(&["py-spy"]) else {
        eprintln!("skipped: no py-spy (set FLAMEOX_PROFILERS_VENV; .ci/run installs it)");
        return;
    };
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), SQUARE).expect("config");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = project.command(&[
        "capture",
        "plan",
        "py-spy",
        "--workload",
        "square",
        "--adapter-options",
        r#"{"rate": 1000, "native": true}"#,
        "--json",
    ]);
    cmd.env("PATH", path);
    let plan = flameox_tests::success_json(&mut cmd, &["capture", "plan"]);
    let command: Vec<&str> = plan["plan"]["command"]
        .as_array()
        .unwrap_or_else(|| panic!("{plan}"))
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let rate = command.iter().position(|a| *a == "--rate").expect("--rate");
    assert_eq!(command[rate + 1], "1000", "{command:?}");
    assert_eq!(
        command.iter().filter(|a| **a == "--rate").count(),
        1,
        "{command:?}"
    );
    assert!(command.contains(&"--native"), "{command:?}");
}
