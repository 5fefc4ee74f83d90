//! `flameox.toml` configuration: strict schema and validation, edits that
//! keep comments and unrelated entries byte for byte, idempotent create,
//! stale configuration ids, invalid files never overwritten, and the CLI /
//! MCP views (status, list, show, annotations).

use flameox_engine::Workspace;
use flameox_engine::error::ErrorCode;
use flameox_engine::project::edit::{ConfigureRequest, Operation, configure_workload};
use flameox_engine::project::{self, WorkloadDef, parse};
use flameox_engine::services::workloads;
use flameox_tests::Project;
use flameox_tests::workloads::{call_tool as call, in_process_server};
use serde_json::json;

const ORIGINAL: &str = r#"# Project workloads. Keep this comment.
[workloads.other]   # trailing comment on a header
argv = ["python3", "-c", "print({n})"]   # inline comment
timeout_seconds = 5
parameters = { n = [1, 2, 3] }

# An experiment that must survive edits untouched.
[experiments.grow]
workload = "other"
scaling = { parameter = "n", values = [1, 2, 3] }
repetitions = 3
seed = 7
primary_metric = "wall_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.95
"#;

fn open_ws(project: &Project) -> Workspace {
    Workspace::open(&project.path().join(".flameox")).expect("workspace")
}

fn def(argv: &[&str]) -> WorkloadDef {
    serde_json::from_value(json!({
        "argv": argv,
        "timeout_seconds": 10,
        "parameters": { "size": [10, 100] },
        "environment": { "MODE": "fast-{size}" }
    }))
    .expect("definition")
}

fn request(op: Operation, name: &str, d: WorkloadDef, id: Option<String>) -> ConfigureRequest {
    ConfigureRequest {
        operation: op,
        name: name.into(),
        definition: d,
        configuration_id: id,
    }
}

fn write_config(project: &Project, text: &str) {
    std::fs::write(project.path().join("flameox.toml"), text).expect("write flameox.toml");
}

fn read_config(project: &Project) -> String {
    std::fs::read_to_string(project.path().join("flameox.toml")).expect("read flameox.toml")
}

#[test]
fn create_then_replace_keep_comments_and_unrelated_entries_byte_for_byte() {
    let project = Project::new();
    write_config(&project, ORIGINAL);
    let ws = open_ws(&project);
    let sort = def(&["python3", "sort.py", "{size}"]);
    let create_sort =
        || configure_workload(&ws, &request(Operation::Create, "sort", sort.clone(), None));
    let created = create_sort().expect("create");
    assert!(created.changed);
    let after_create = read_config(&project);
    assert!(
        after_create.starts_with(ORIGINAL),
        "the original bytes must stay a prefix:\n{after_create}"
    );
    assert_eq!(
        created.configuration_id,
        project::configuration_id(after_create.as_bytes())
    );
    let parsed = parse(&after_create).expect("result is valid");
    assert_eq!(parsed.workloads["sort"], sort);

    // Idempotent: the identical definition writes nothing.
    let again = create_sort().expect("idempotent create");
    assert!(!again.changed);
    assert_eq!(read_config(&project), after_create);

    // Replace the NEW entry: the original text (comments, `other`, the experiment) is untouched.
    let replaced = configure_workload(
        &ws,
        &request(
            Operation::Replace,
            "sort",
            def(&["python3", "sort2.py", "{size}"]),
            Some(created.configuration_id.clone()),
        ),
    )
    .expect("replace");
    let after_replace = read_config(&project);
    assert!(after_replace.starts_with(ORIGINAL), "{after_replace}");
    assert!(after_replace.contains("sort2.py") && !after_replace.contains("\"sort.py\""));
    assert_eq!(
        replaced.previous_configuration_id,
        Some(created.configuration_id.clone())
    );

    // Replace the FIRST entry: its header comment and everything after it survive.
    let other: WorkloadDef = serde_json::from_value(json!({
        "argv": ["python3", "other.py", "{n}"], "timeout_seconds": 5, "parameters": { "n": [1, 2, 3] }
    }))
    .expect("definition");
    let replaced_other = configure_workload(
        &ws,
        &request(
            Operation::Replace,
            "other",
            other,
            Some(replaced.configuration_id.clone()),
        ),
    )
    .expect("replace other");
    assert!(replaced_other.changed);
    let text = read_config(&project);
    assert!(
        text.starts_with("# Project workloads. Keep this comment.\n"),
        "{text}"
    );
    assert!(
        text.contains("other.py") && !text.contains("print({n})"),
        "{text}"
    );
    let experiment_block = &ORIGINAL[ORIGINAL.find("# An experiment").unwrap()..];
    assert!(text.contains(experiment_block), "{text}");
    assert!(parse(&text).is_ok());
}

#[test]
fn a_replace_that_would_break_an_experiment_is_refused_and_the_file_kept() {
    let project = Project::new();
    write_config(&project, ORIGINAL);
    let ws = open_ws(&project);
    let id = project::configuration_id(ORIGINAL.as_bytes());
    // `other` loses parameter `n`, which experiment `grow` scales over.
    let err = configure_workload(
        &ws,
        &request(
            Operation::Replace,
            "other",
            def(&["python3", "x.py"]),
            Some(id),
        ),
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::WorkspaceInvalid);
    let diagnostics = err.details["diagnostics"].to_string();
    assert!(
        diagnostics.contains("experiments.grow.scaling"),
        "{diagnostics}"
    );
    assert_eq!(read_config(&project), ORIGINAL);
}

#[test]
fn stale_configuration_id_is_a_revision_conflict_and_changes_nothing() {
    let project = Project::new();
    write_config(&project, ORIGINAL);
    let ws = open_ws(&project);
    let stale_id = project::configuration_id(ORIGINAL.as_bytes());
    // Someone edits the file after the id was read.
    let edited = format!("{ORIGINAL}\n# edited by hand\n");
    write_config(&project, &edited);
    let err = configure_workload(
        &ws,
        &request(
            Operation::Replace,
            "other",
            def(&["python3", "a.py", "{size}"]),
            Some(stale_id),
        ),
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::RevisionConflict);
    assert!(err.retryable);
    assert_eq!(
        err.recovery.as_ref().map(|r| r.next_tool.as_str()),
        Some("workload_configuration_status")
    );
    assert_eq!(read_config(&project), edited);
    // Replace without an id is refused too.
    let err = configure_workload(
        &ws,
        &request(Operation::Replace, "other", def(&["python3", "a.py"]), None),
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArguments);
}

#[test]
fn invalid_files_are_never_overwritten_but_create_may_repair_the_broken_entry() {
    let project = Project::new();
    let ws = open_ws(&project);
    // Broken TOML syntax: nothing can be edited.
    let broken = "[workloads.a\nargv = [\"true\"]\n";
    write_config(&project, broken);
    let err = configure_workload(&ws, &request(Operation::Create, "b", def(&["true"]), None))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::WorkspaceInvalid);
    assert_eq!(read_config(&project), broken);

    // Valid TOML, invalid workload `a`: creating another one keeps it invalid → refused.
    let invalid =
        "# keep\n[workloads.a]\nargv = [\"sh\", \"-c\", \"echo hi\"]\ntimeout_seconds = 5\n";
    write_config(&project, invalid);
    let status = workloads::configuration_status(&ws).expect("status");
    assert_eq!(status.status, "invalid");
    assert_eq!(status.next_tool, "configure_workload");
    assert_eq!(status.diagnostics[0].key_path, "workloads.a.argv");
    let err = configure_workload(&ws, &request(Operation::Create, "b", def(&["true"]), None))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::WorkspaceInvalid);
    assert_eq!(read_config(&project), invalid);

    // Creating `a` itself with a valid definition repairs the file.
    let repaired = configure_workload(
        &ws,
        &request(Operation::Create, "a", def(&["echo", "hi"]), None),
    )
    .expect("repair");
    assert!(repaired.changed);
    let text = read_config(&project);
    assert!(text.starts_with("# keep\n"), "{text}");
    assert_eq!(
        workloads::configuration_status(&ws).unwrap().status,
        "valid"
    );
}

fn problems_of(text: &str) -> Vec<(String, String)> {
    match parse(text) {
        Ok(_) => Vec::new(),
        Err(d) => d.into_iter().map(|d| (d.key_path, d.reason)).collect(),
    }
}

fn workload_toml(argv: &str, extra: &str) -> String {
    format!(
        "[workloads.w]\nargv = {argv}\ntimeout_seconds = 5\nparameters = {{ size = [1, 2] }}\n{extra}"
    )
}

#[test]
fn placeholders_shells_paths_and_numbers_are_validated_with_key_paths() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (r#"["prog", "{size}"]"#, "", "", ""),
        (r#"["prog", "{{literal}}", "{size}x"]"#, "", "", ""),
        (
            r#"["prog", "{nope}"]"#,
            "",
            "workloads.w.argv[1]",
            "names no declared parameter",
        ),
        (
            r#"["prog", "{size"]"#,
            "",
            "workloads.w.argv[1]",
            "unclosed",
        ),
        (r#"["prog", "a}"]"#, "", "workloads.w.argv[1]", "unmatched"),
        (
            r#"["prog", "{a b}"]"#,
            "",
            "workloads.w.argv[1]",
            "plain parameter name",
        ),
        (
            r#"["sh", "-c", "echo {size}"]"#,
            "",
            "workloads.w.argv",
            "shell strings",
        ),
        (
            r#"["/bin/bash", "-lc", "echo"]"#,
            "",
            "workloads.w.argv",
            "shell strings",
        ),
        (
            r#"["env", "A=1", "sh", "-c", "x"]"#,
            "",
            "workloads.w.argv",
            "shell strings",
        ),
        (r#"["prog", "--", "x"]"#, "", "workloads.w.argv[1]", "`--`"),
        (
            r#"["python3 bench.py"]"#,
            "",
            "workloads.w.argv[0]",
            "one plain word",
        ),
        (r#"["{size}"]"#, "", "workloads.w.argv[0]", "one plain word"),
        (r#"[]"#, "", "workloads.w.argv", "1..=256"),
        (
            r#"["prog"]"#,
            "cwd = \"../outside\"\n",
            "workloads.w.cwd",
            "climbs out",
        ),
        (
            r#"["prog"]"#,
            "cwd = \"/etc\"\n",
            "workloads.w.cwd",
            "absolute",
        ),
        (
            r#"["prog"]"#,
            "writable_paths = [\"a/../../b\"]\n",
            "workloads.w.writable_paths[0]",
            "climbs out",
        ),
        (
            r#"["prog"]"#,
            "environment = { \"BAD-NAME\" = \"x\" }\n",
            "workloads.w.environment.BAD-NAME",
            "variable names",
        ),
        (
            r#"["prog"]"#,
            "environment = { OK = \"{other}\" }\n",
            "workloads.w.environment.OK",
            "no declared",
        ),
        (
            r#"["prog"]"#,
            "identity = { executable_sha256 = \"abc\" }\n",
            "workloads.w.identity.executable_sha256",
            "64 lowercase",
        ),
        (
            r#"["prog"]"#,
            "outputs = { trace = { path = \"../t.json\" } }\n",
            "workloads.w.outputs.trace.path",
            "climbs out",
        ),
        (
            r#"["prog"]"#,
            "outputs = { trace = { path = \"t.json\", kind = \"mp3\" } }\n",
            "workloads.w.outputs.trace.kind",
            "not one of",
        ),
        (
            r#"["prog"]"#,
            "oracle = { exit_codes = [] }\n",
            "workloads.w.oracle.exit_codes",
            "must not be empty",
        ),
    ];
    for (argv, extra, key, reason) in cases {
        let text = workload_toml(argv, extra);
        let problems = problems_of(&text);
        if key.is_empty() {
            assert!(problems.is_empty(), "{argv} {extra}: {problems:?}");
            continue;
        }
        assert!(
            problems.iter().any(|(k, r)| k == key && r.contains(reason)),
            "{argv} {extra}: expected {key} ~ {reason}, got {problems:?}"
        );
    }
    // Numbers and choices.
    for (text, key) in [
        (
            "[workloads.w]\nargv = [\"p\"]\ntimeout_seconds = 0\n",
            "workloads.w.timeout_seconds",
        ),
        (
            "[workloads.w]\nargv = [\"p\"]\ntimeout_seconds = -1\n",
            "workloads.w.timeout_seconds",
        ),
        (
            "[workloads.w]\nargv = [\"p\"]\ntimeout_seconds = 1\nparameters = { n = [] }\n",
            "workloads.w.parameters.n",
        ),
        (
            "[workloads.w]\nargv = [\"p\"]\ntimeout_seconds = 1\nparameters = { n = [1, 1] }\n",
            "workloads.w.parameters.n[1]",
        ),
    ] {
        let problems = problems_of(text);
        assert!(
            problems.iter().any(|(k, _)| k == key),
            "{text}: {problems:?}"
        );
    }
    // Unknown keys and wrong types are errors with a location.
    let unknown = problems_of("[workloads.w]\nargv = [\"p\"]\ntimeout_seconds = 1\nshell = true\n");
    assert_eq!(unknown[0].0, "workloads.w.shell", "{unknown:?}");
    let table = problems_of("[workload.w]\nargv = [\"p\"]\n");
    assert!(table[0].1.contains("unknown field"), "{table:?}");
}

#[test]
fn experiments_must_name_declared_workloads_parameters_and_choices() {
    let base = workload_toml(
        r#"["prog", "{size}"]"#,
        "parameters = { size = [1, 2, 4], algo = [\"a\", \"b\"] }\n",
    )
    .replace("parameters = { size = [1, 2] }\n", "");
    let experiment = |body: &str| {
        format!(
            "{base}[experiments.e]\n{body}\nrepetitions = 3\nseed = 1\nprimary_metric = \"wall_time\"\npolarity = \"lower_is_better\"\npractical_threshold = 0.05\nconfidence_level = 0.95\n"
        )
    };
    let ok = experiment(
        "workload = \"w\"\nscaling = { parameter = \"size\", values = [1, 2, 4] }\nvariants = { base = { algo = \"a\" }, fast = { algo = \"b\" } }",
    );
    assert!(problems_of(&ok).is_empty(), "{:?}", problems_of(&ok));
    for (body, key) in [
        ("workload = \"missing\"", "experiments.e.workload"),
        (
            "workload = \"w\"\nscaling = { parameter = \"size\", values = [1, 3] }",
            "experiments.e.scaling.values[1]",
        ),
        (
            "workload = \"w\"\nvariants = { v = { algo = \"c\" } }",
            "experiments.e.variants.v.algo",
        ),
        (
            "workload = \"w\"\nscaling = { parameter = \"size\", values = [1, 2] }\nvariants = { v = { size = 1 } }",
            "experiments.e.variants.v.size",
        ),
        (
            "workload = \"w\"\nvariants = { v = {} }\nfactors = { algo = [\"a\"] }",
            "experiments.e.factors",
        ),
    ] {
        let problems = problems_of(&experiment(body));
        assert!(
            problems.iter().any(|(k, _)| k == key),
            "{body}: {problems:?}"
        );
    }
    let bad_numbers =
        experiment("workload = \"w\"").replace("confidence_level = 0.95", "confidence_level = 1.5");
    assert!(
        problems_of(&bad_numbers)
            .iter()
            .any(|(k, _)| k == "experiments.e.confidence_level")
    );
    let bad_polarity = experiment("workload = \"w\"").replace("lower_is_better", "smaller");
    assert!(!problems_of(&bad_polarity).is_empty());
}

#[test]
fn cli_lists_and_shows_workloads_and_reports_unknown_names() {
    let project = Project::new();
    // Missing file: a typed error pointing at configuration (seed, "Exit
    // codes": "2: invalid arguments or configuration").
    let err = project.json_err(&["workload", "list"], "WORKSPACE_INVALID", 2);
    assert_eq!(err["recovery"]["next_tool"], "configure_workload");
    write_config(&project, ORIGINAL);
    let list = project.json(&["workload", "list"]);
    assert_eq!(list["workloads"][0]["name"], "other");
    assert_eq!(list["workloads"][0]["configuration_source"], "project");
    assert_eq!(list["workloads"][0]["parameters"]["n"]["default"], 1);
    assert_eq!(
        list["configuration_id"],
        project::configuration_id(ORIGINAL.as_bytes())
    );
    let experiments = project.json(&["workload", "list", "--kind", "experiment"]);
    assert_eq!(experiments["experiments"][0]["scaling_parameter"], "n");
    let show = project.json(&["workload", "show", "other"]);
    assert_eq!(show["definition"]["argv"][2], "print({n})");
    assert_eq!(show["requirements"][0]["kind"], "executable");
    assert_eq!(show["requirements"][0]["satisfied"], true);
    let err = project.json_err(&["workload", "show", "othr"], "INVALID_ARGUMENTS", 2);
    assert_eq!(err["details"]["closest"][0], "other");
}

#[tokio::test]
async fn mcp_first_run_sequence_configures_then_discovers() {
    let project = Project::new();
    let server = in_process_server(project.path());
    let status = call(&server, "workload_configuration_status", json!({})).await;
    assert_eq!(status["result"]["status"], "missing");
    assert_eq!(status["result"]["next_tool"], "configure_workload");

    let args = json!({
        "operation": "create", "name": "sort",
        "argv": ["python3", "-c", "print({n})"], "timeout_seconds": 5,
        "parameters": { "n": [1, 2] }
    });
    let created = call(&server, "configure_workload", args.clone()).await;
    assert_eq!(created["ok"], true, "{created}");
    assert_eq!(created["result"]["configuration_source"], "agent");
    assert_eq!(created["result"]["next_tool"], "list_declared_workflows");
    let again = call(&server, "configure_workload", args).await;
    assert_eq!(again["result"]["changed"], false);

    let unknown = call(
        &server,
        "configure_workload",
        json!({ "operation": "create", "name": "x", "argv": ["p"], "timeout_seconds": 1, "shell": "bash" }),
    )
    .await;
    assert_eq!(unknown["ok"], false);
    assert_eq!(unknown["error"]["code"], "INVALID_ARGUMENTS");
    let shell = call(
        &server,
        "configure_workload",
        json!({ "operation": "create", "name": "x", "argv": ["bash", "-c", "ls"], "timeout_seconds": 1 }),
    )
    .await;
    assert_eq!(
        shell["error"]["details"]["fields"][0]["field"],
        "workloads.x.argv"
    );

    let listed = call(&server, "list_declared_workflows", json!({})).await;
    assert_eq!(listed["result"]["workloads"][0]["name"], "sort");
    assert_eq!(
        listed["result"]["workloads"][0]["configuration_source"],
        "agent"
    );
    let detail = call(&server, "get_declared_workflow", json!({ "name": "sort" })).await;
    assert_eq!(
        detail["result"]["definition"]["parameters"]["n"],
        json!([1, 2])
    );
    let status = call(&server, "workload_configuration_status", json!({})).await;
    assert_eq!(status["result"]["status"], "valid");
    assert_eq!(status["result"]["next_tool"], "list_declared_workflows");

    let stale = call(
        &server,
        "configure_workload",
        json!({ "operation": "replace", "name": "sort", "argv": ["true"], "timeout_seconds": 1,
                "configuration_id": "sha256:0000000000000000000000000000000000000000000000000000000000000000" }),
    )
    .await;
    assert_eq!(stale["error"]["code"], "REVISION_CONFLICT");
}
