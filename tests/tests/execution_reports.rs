//! Test reports made by the real tools from the virtualenv `.ci/run`
//! installs with pinned pytest and coverage (path in
//! `FLAMEOX_PROFILERS_VENV`): `coverage run -m pytest --junitxml`, then
//! `coverage json`. coverage.py's report: content detection names it, and
//! every file's and the totals' numbers land in `measurements` exactly as
//! the report states them, the file's path as the row's parameter; a
//! second run whose tests reach the uncovered function shows that file's
//! coverage rising. pytest's JUnit XML: the slowest test is the top
//! hotspot with its outcome as category, a failing test reads `failed`
//! with its message, and the synthetic start times are said. When
//! `FLAMEOX_PROFILERS_VENV` or `CI` is set, missing tools FAIL this test.

use std::path::{Path, PathBuf};
use std::process::Command;

use flameox_tests::Project;
use serde_json::Value;

fn tools_bin() -> Option<PathBuf> {
    flameox_tests::profilers_python(&["pytest", "coverage"])
}

/// A package with a sorting module whose `unused` function only the
/// second run's tests call; returns the coverage.json of `coverage run -m
/// pytest` over it.
fn coverage_report(bin: &Path, dir: &Path, reach_unused: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join("app")).expect("app");
    std::fs::create_dir_all(dir.join("tests")).expect("tests");
    std::fs::write(dir.join("app/__init__.py"), "").expect("init");
    std::fs::write(
        dir.join("app/sorting.py"),
        "def bubble(values):\n    values = list(values)\n    for i in range(len(values)):\n        for j in range(len(values) - 1 - i):\n            if values[j] > values[j + 1]:\n                values[j], values[j + 1] = values[j + 1], values[j]\n    return values\n\n\ndef unused(values):\n    ordered = sorted(values)\n    ordered.reverse()\n    return ordered\n",
    )
    .expect("sorting");
    let mut tests = "import time\n\nfrom app import sorting\n\n\ndef test_bubble():\n    assert sorting.bubble([3, 1, 2]) == [1, 2, 3]\n\n\ndef test_slow():\n    time.sleep(0.08)\n\n\ndef test_fails():\n    assert sorting.bubble([2, 1]) == [2, 1], 'bubble sorts'\n".to_owned();
    if reach_unused {
        tests += "\n\ndef test_unused():\n    assert sorting.unused([1, 3, 2]) == [3, 2, 1]\n";
    }
    std::fs::write(dir.join("tests/test_sorting.py"), tests).expect("tests");
    let python = bin.join("python3");
    let run = |args: &[&str], allowed: &[i32]| {
        let out = Command::new(&python)
            .args(args)
            .current_dir(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("python runs");
        assert!(
            out.status.code().is_some_and(|c| allowed.contains(&c)),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // pytest exits 1: one test fails on purpose.
    run(
        &[
            "-m",
            "coverage",
            "run",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml=junit.xml",
            "tests",
        ],
        &[1],
    );
    run(&["-m", "coverage", "json", "-o", "coverage.json"], &[0]);
    dir.join("coverage.json")
}

/// `coverage.<name>` of `path` (None: the totals) in a run's measurements.
fn measured(project: &Project, run: &str, name: &str, path: Option<&str>) -> f64 {
    let page = project.json(&[
        "measurements",
        "query",
        run,
        "--name-prefix",
        &format!("coverage.{name}"),
        "--limit",
        "100",
    ]);
    let rows = page["rows"].as_array().expect("rows");
    let wanted = match path {
        Some(p) => serde_json::json!({ "path": p }),
        None => Value::Null,
    };
    rows.iter()
        .find(|r| {
            r["name"] == format!("coverage.{name}").as_str()
                && (r["parameters"] == wanted
                    || (wanted.is_null()
                        && r["parameters"].as_object().is_some_and(|o| o.is_empty())))
        })
        .and_then(|r| r["value"].as_f64())
        .unwrap_or_else(|| panic!("no coverage.{name} for {path:?} in {page:#}"))
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn pytest_and_coverage_reports_land_as_the_tools_state_them() {
    let Some(bin) = tools_bin() else { return };
    let project = Project::new();
    let first = coverage_report(&bin, &project.path().join("first"), false);
    let second = coverage_report(&bin, &project.path().join("second"), true);
    let imported = project.json(&["import", first.to_str().expect("utf8")]);
    assert_eq!(imported["kind"], "coverage_json", "{imported}");
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let report: Value =
        serde_json::from_slice(&std::fs::read(&first).expect("report")).expect("json");
    let files = report["files"].as_object().expect("files");
    assert!(files.contains_key("app/sorting.py"), "{report}");
    for (path, file) in files {
        for name in [
            "percent_covered",
            "covered_lines",
            "num_statements",
            "missing_lines",
        ] {
            assert_eq!(
                measured(&project, &run, name, Some(path)),
                file["summary"][name].as_f64().expect("number"),
                "{path} {name}"
            );
        }
    }
    assert_eq!(
        measured(&project, &run, "percent_covered", None),
        report["totals"]["percent_covered"].as_f64().expect("total")
    );
    let before = measured(&project, &run, "percent_covered", Some("app/sorting.py"));
    assert!(before < 100.0, "unused is not reached: {before}");

    let second_run = project.json(&["import", second.to_str().expect("utf8")])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let after = measured(
        &project,
        &second_run,
        "percent_covered",
        Some("app/sorting.py"),
    );
    assert_eq!(after, 100.0);

    // pytest's JUnit XML of the same run.
    let junit = first.with_file_name("junit.xml");
    let tests = project.json(&["import", junit.to_str().expect("utf8")]);
    assert_eq!(tests["kind"], "junit_xml", "{tests}");
    assert_eq!(tests["producer"], "pytest");
    assert!(
        tests["limitations"]
            .to_string()
            .contains("synthetic_start_times")
    );
    let junit_run = tests["run_id"].as_str().expect("run").to_owned();
    let hot = project.json(&["analyze", "hotspots", &junit_run, "--limit", "10"]);
    let rows = hot["rows"].as_array().expect("rows");
    let test_rows: Vec<&Value> = rows
        .iter()
        .filter(|r| r["category"] != "testsuite")
        .collect();
    assert_eq!(test_rows.len(), 3, "{hot:#}");
    assert_eq!(test_rows[0]["function"], "tests.test_sorting::test_slow");
    assert!(
        test_rows[0]["self_value"]
            .as_f64()
            .is_some_and(|ns| ns >= 75e6),
        "{hot:#}"
    );
    let failed = rows
        .iter()
        .find(|r| r["function"] == "tests.test_sorting::test_fails")
        .expect("the failing test");
    assert_eq!(failed["category"], "failed", "{failed}");
    let window = project.json(&[
        "trace",
        "window",
        &junit_run,
        "--start-ns",
        "0",
        "--end-ns",
        "1000000000000",
        "--relative",
        "--name",
        "tests.test_sorting::test_fails",
    ]);
    let args = window["events"][0]["args_json"].as_str().unwrap_or("");
    assert!(
        args.contains("bubble sorts"),
        "the failure message: {window:#}"
    );

    // Each report set as one run; `analyze execution` over the second
    // against the first.
    let listing = |dir: &Path| {
        let out = Command::new(bin.join("python3"))
            .args(["-X", "importtime", "-c", "import app.sorting, json"])
            .current_dir(dir)
            .output()
            .expect("python runs");
        let path = dir.join("importtime.txt");
        std::fs::write(&path, &out.stderr).expect("listing");
        path
    };
    let run_of = |coverage: &Path| {
        let dir = coverage.parent().expect("dir");
        let files = [dir.join("junit.xml"), coverage.to_path_buf(), listing(dir)];
        let mut args = vec!["import".to_owned()];
        args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        project.json(&args)["run_id"]
            .as_str()
            .expect("run")
            .to_owned()
    };
    let (base, target) = (run_of(&first), run_of(&second));
    let ex = project.json(&["analyze", "execution", &target, "--compare", &base]);
    assert_eq!(ex["tests"]["tests"], 4, "{ex:#}");
    assert_eq!(ex["tests"]["by_outcome"]["failed"], 1);
    assert_eq!(
        ex["tests"]["slowest"][0]["name"],
        "tests.test_sorting::test_slow"
    );
    assert_eq!(
        ex["tests"]["failing"][0]["name"],
        "tests.test_sorting::test_fails"
    );
    assert_eq!(
        ex["coverage"]["percent_covered"],
        measured(&project, &second_run, "percent_covered", None)
    );
    assert!(
        ex["imports"]["slowest"]
            .as_array()
            .is_some_and(|m| !m.is_empty()),
        "{ex:#}"
    );
    assert!(ex["missing"].as_array().is_some_and(Vec::is_empty));
    // Seed, analyze_execution: results "carry an evidence object".
    assert_eq!(ex["evidence"]["status"], "available", "{ex:#}");
    let changes = ex["compare"]["coverage_changes"]
        .as_array()
        .expect("changes");
    let sorting = changes
        .iter()
        .find(|c| c["path"] == "app/sorting.py")
        .expect("app/sorting.py changed");
    assert_eq!(sorting["base"], before);
    assert_eq!(sorting["target"], 100.0);
    assert_eq!(ex["compare"]["newly_failing"], serde_json::json!([]));
    // A run with one report says what else to import.
    let bare = project.json(&["analyze", "execution", &junit_run]);
    assert_eq!(
        bare["missing"].as_array().map(Vec::len),
        Some(2),
        "{bare:#}"
    );
    assert_eq!(bare["evidence"]["status"], "partial", "{bare:#}");
    assert_eq!(bare["evidence"]["reason"], "reports_missing", "{bare:#}");
}
