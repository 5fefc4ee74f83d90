//! Artifact pipelines (issue 47; the seed's `register_artifact_pipeline`,
//! `compare_artifact_pipelines`): one Python workload profiled by py-spy
//! (sampled, speedscope) and by viztracer (traced, Chrome JSON), both from
//! the virtualenv `.ci/run` installs. Two registered pipelines compare
//! them: the frames whose shares of their side's total differ beyond the
//! tolerance are exactly those this test's own reading of the two
//! hotspot answers finds (frames matched by function and file, viztracer's
//! `name (file:line)` read apart), with the same differences. Registering
//! is idempotent, a changed definition needs the revision read, and a
//! side extracted otherwise than its pipeline says is refused with the
//! `extract_artifact` call that fixes it.

use std::collections::BTreeMap;
use std::process::Command;

use flameox_tests::Project;
use serde_json::Value;

const WORKLOAD: &str = "import time\n\ndef small(i):\n    return i * 2\n\ndef leaf(n):\n    s = 0\n    for i in range(n):\n        s += small(i)\n    return s\n\ndef busy(n):\n    t = 0\n    for _ in range(40):\n        t += leaf(n)\n    return t\n\ndef sleepy():\n    time.sleep(0.2)\n\ndef main():\n    for _ in range(4):\n        busy(2000)\n        sleepy()\n\nmain()\n";

/// `function (file)` → share of the side's total self value, the test's
/// own reading of a hotspots answer.
fn shares(page: &Value) -> BTreeMap<String, f64> {
    let total = page["total_self"].as_f64().expect("total_self").max(1.0);
    let mut out = BTreeMap::new();
    for row in page["rows"].as_array().expect("rows") {
        let name = row["function"].as_str().expect("function");
        let (function, file) = match row["file"].as_str() {
            Some(file) => (name.to_owned(), Some(file.to_owned())),
            // viztracer: `leaf (/path/work.py:6)`.
            None => match name.rsplit_once(" (") {
                Some((f, rest)) if rest.ends_with(')') && rest.contains(':') => {
                    let inner = &rest[..rest.len() - 1];
                    let file = inner.rsplit_once(':').map(|(p, _)| p.to_owned());
                    (f.to_owned(), file)
                }
                _ => (name.to_owned(), None),
            },
        };
        let key = match file {
            Some(file) => format!("{function} ({file})"),
            None => function,
        };
        *out.entry(key).or_insert(0.0) += 100.0 * row["self_value"].as_f64().unwrap_or(0.0) / total;
    }
    out
}

#[test]
fn py_spy_and_viztracer_pipelines_name_the_frames_whose_shares_differ() {
    let Some(bin) = flameox_tests::profilers_bin(&["py-spy", "viztracer", "python3"]) else {
        return;
    };
    let project = Project::new();
    let script = project.path().join("work.py");
    std::fs::write(&script, WORKLOAD).expect("workload");
    let sampled = project.path().join("pyspy.json");
    let status = Command::new(bin.join("py-spy"))
        // 1,000 samples a second: the four busy bursts last ~5 ms each, so
        // at 250 Hz a handful of samples could all miss `leaf`.
        .args(["record", "-r", "1000", "-f", "speedscope", "-o"])
        .arg(&sampled)
        .arg("--")
        .arg(bin.join("python3"))
        .arg(&script)
        .status()
        .expect("py-spy");
    assert!(status.success(), "py-spy record failed");
    let traced = project.path().join("viz.json");
    let status = Command::new(bin.join("viztracer"))
        .arg("-o")
        .arg(&traced)
        .arg(&script)
        .current_dir(project.path())
        .status()
        .expect("viztracer");
    assert!(status.success(), "viztracer failed");
    let base = project.json(&["import", "pyspy.json"])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let target = project.json(&["import", "viz.json"])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();

    let first = project.json(&[
        "pipelines",
        "register",
        "sampled",
        "--kind",
        "speedscope",
        "--producer",
        "py-spy",
    ]);
    assert_eq!(first["revision"], 1);
    assert_eq!(
        first["kind"], "speedscope_json",
        "the alias is stored as the kind's name"
    );
    let again = project.json(&[
        "pipelines",
        "register",
        "sampled",
        "--kind",
        "speedscope",
        "--producer",
        "py-spy",
    ]);
    assert_eq!(
        (&again["revision"], &again["changed"]),
        (&Value::from(1), &Value::from(false))
    );
    project.json(&[
        "pipelines",
        "register",
        "traced",
        "--kind",
        "chrome_json",
        "--producer",
        "viztracer",
    ]);
    let conflict = project.json_err(
        &["pipelines", "register", "traced", "--kind", "chrome_json"],
        "REVISION_CONFLICT",
        7,
    );
    assert_eq!(conflict["details"]["current_revision"], 1, "{conflict}");

    // The trace was read as a Chrome trace: its producer is not viztracer.
    let compare = |extra: &[&str]| {
        let mut args = vec![
            "pipelines",
            "compare",
            &target,
            &base,
            "--pipeline",
            "traced",
            "--base-pipeline",
            "sampled",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let args = compare(&["--tolerance-pp", "5"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let refused = project.json_err(&args, "INVALID_ARGUMENTS", 2);
    assert_eq!(
        refused["details"]["next"]["tool"], "extract_artifact",
        "{refused}"
    );
    assert_eq!(
        refused["details"]["next"]["arguments"]["producer"],
        "viztracer"
    );
    let revised = project.json(&[
        "pipelines",
        "register",
        "traced",
        "--kind",
        "chrome_json",
        "--expected-revision",
        "1",
    ]);
    assert_eq!(revised["revision"], 2);

    let c = project.json(&args);
    assert_eq!(c["target"]["pipeline"], "traced");
    assert_eq!(c["base"]["metric"], "cpu.samples", "{c}");
    assert_eq!(c["target"]["metric"], "trace.wall_ns", "{c}");
    let (b, t) = (
        shares(&project.json(&["analyze", "hotspots", &base, "--limit", "1000"])),
        shares(&project.json(&["analyze", "hotspots", &target, "--limit", "1000"])),
    );
    let mut expected: BTreeMap<String, f64> = b
        .iter()
        .filter_map(|(k, bs)| t.get(k).map(|ts| (k.clone(), ts - bs)))
        .filter(|(_, d)| d.abs() > 5.0)
        .collect();
    assert!(
        b.keys()
            .any(|k| k.starts_with("leaf (") && t.contains_key(k)),
        "leaf matches across profilers: {b:?} {t:?}"
    );
    assert_eq!(
        c["matched_frames"],
        b.keys().filter(|k| t.contains_key(*k)).count()
    );
    let got: BTreeMap<String, f64> = c["differing"]
        .as_array()
        .expect("differing")
        .iter()
        .map(|r| {
            let key = format!(
                "{} ({})",
                r["function"].as_str().unwrap_or(""),
                r["file"].as_str().unwrap_or("")
            );
            (key, r["delta_pp"].as_f64().unwrap_or(f64::NAN))
        })
        .collect();
    assert!(
        !expected.is_empty(),
        "the profilers disagree somewhere: {b:?} {t:?}"
    );
    assert_eq!(c["differing_total"], expected.len(), "{c}");
    assert_eq!(got.len(), expected.len(), "{got:?} vs {expected:?}");
    for (key, delta) in &got {
        let want = expected
            .remove(key)
            .unwrap_or_else(|| panic!("{key} is not expected to differ"));
        assert!((delta - want).abs() < 1e-6, "{key}: {delta} vs {want}");
    }
    // time.sleep is a C call only the tracer sees.
    let only_target: Vec<&str> = c["only_in_target"]
        .as_array()
        .expect("only in target")
        .iter()
        .filter_map(|r| r["function"].as_str())
        .collect();
    assert!(only_target.contains(&"time.sleep"), "{c}");

    // A pipeline against itself over the same run agrees everywhere.
    let same = project.json(&[
        "pipelines",
        "compare",
        &base,
        &base,
        "--pipeline",
        "sampled",
    ]);
    assert_eq!(same["differing_total"], 0, "{same}");
    assert_eq!(
        same["top_frames"]["shared"],
        same["top_frames"]["base_top"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0)
    );
}

/// The run's new extraction (`as_chrome`) against its old one
/// (`as_kineto`), the base read at `commit` when given.
fn old_vs_new<'a>(run: &'a str, commit: Option<&'a str>) -> Vec<&'a str> {
    let mut args = vec![
        "pipelines",
        "compare",
        run,
        run,
        "--pipeline",
        "as_chrome",
        "--base-pipeline",
        "as_kineto",
    ];
    if let Some(commit) = commit {
        args.extend(["--base-commit", commit]);
    }
    args
}

#[test]
fn one_artifact_before_and_after_a_re_extraction_compares_through_a_retained_commit() {
    let project = Project::new();
    let dir = project.path().join("job");
    std::fs::create_dir_all(&dir).expect("job");
    flameox_tests::write_kineto_job(&dir, 1, 400, 11);
    let imported = project.json(&["import", "job/rank0.pt.trace.json"]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let before = imported["commit_id"].as_str().expect("commit").to_owned();
    assert_eq!(imported["producer"], "torch.profiler", "{imported}");
    project.json(&[
        "pipelines",
        "register",
        "as_kineto",
        "--producer",
        "torch.profiler",
    ]);
    project.json(&["pipelines", "register", "as_chrome", "--producer", "chrome"]);
    project.json(&["extract", &run, "--producer", "chrome"]);

    // At HEAD the artifact holds only the new extraction.
    let refused = project.json_err(&old_vs_new(&run, None), "INVALID_ARGUMENTS", 2);
    assert_eq!(
        refused["details"]["next"]["tool"], "extract_artifact",
        "{refused}"
    );
    let c = project.json(&old_vs_new(&run, Some(&before)));
    assert_eq!(c["base"]["commit_id"], before.as_str(), "{c}");
    assert_ne!(c["target"]["commit_id"], before.as_str(), "{c}");
    assert_eq!(
        c["base"]["producers"],
        serde_json::json!(["torch.profiler"])
    );
    assert_eq!(c["target"]["producers"], serde_json::json!(["chrome"]));
    assert!(c["matched_frames"].as_u64().unwrap_or(0) > 0, "{c}");
    assert_eq!(
        c["differing_total"], 0,
        "a producer label changes no number: {c}"
    );
    assert_eq!(c["evidence_changes"], serde_json::json!([]), "{c}");
    assert_eq!(
        c["base"]["evidence_rows"]["trace_events"], imported["rows"]["trace_events"],
        "{c}"
    );
    let gone = "0".repeat(64);
    project.json_err(&old_vs_new(&run, Some(&gone)), "INVALID_ARGUMENTS", 2);
}
