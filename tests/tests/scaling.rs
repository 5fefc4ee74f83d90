//! `analyze scaling` through the real binary on runs generated from known
//! curves: per variant, pyperf runs at n = 16 … 16384 (×4, 3 decades, two
//! runs per n) whose samples are c·n, c·n·ln n and c·n² with 2 % run-level
//! and 1 % sample-level log-normal noise; each run also carries a folded
//! profile where `work` grows with n and `setup` is fixed. The right model
//! must be named, the power-law exponent CI must hold the true exponent
//! (1 and 2), the growing frame must be reported (and the fixed one not),
//! a non-numeric n is a typed error, and `analyze record` stores the same
//! result. The same through MCP: `freeze_run_set`, `analyze_scaling`,
//! `compare_run_sets`, `record_analysis`, the run-set resource.

use crate::support;

use flameox_tests::Project;
use flameox_tests::generated_runs::{Noise, import_run, pyperf_json, samples, write_file};
use serde_json::{Value, json};

const SIZES: [u32; 6] = [16, 64, 256, 1024, 4096, 16384];

fn curve(variant: &str, n: f64) -> f64 {
    match variant {
        "linear" => 1e-7 * n,
        "nlogn" => 2e-8 * n * n.ln(),
        _ => 1e-9 * n * n,
    }
}

fn generate(project: &Project, variants: &[&str]) {
    let mut noise = Noise::new(2024);
    for variant in variants {
        for n in SIZES {
            for rep in 0..2 {
                let center = curve(variant, n as f64) * noise.factor(0.02);
                let values = samples(&mut noise, center, 5, 0.01);
                let stem = format!("{variant}-{n}-{rep}");
                let bench = write_file(
                    project,
                    &format!("{stem}.json"),
                    &pyperf_json("work", &values),
                );
                let weight = match *variant {
                    "linear" => 10,
                    "nlogn" => 20,
                    _ => 40,
                };
                let folded = format!("main;setup 2000\nmain;work {}\nmain;io 500\n", weight * n);
                let stacks = write_file(project, &format!("{stem}.folded"), &folded);
                import_run(project, &[bench, stacks], variant, &[("n", n.to_string())]);
            }
        }
    }
}

fn freeze(project: &Project, args: &[&str]) -> String {
    let mut all = vec!["runs", "freeze"];
    all.extend_from_slice(args);
    project.json(&all)["run_set"]["run_set_id"]
        .as_str()
        .expect("id")
        .to_owned()
}

fn variant<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .find(|v| v["variant"] == name)
        .unwrap_or_else(|| panic!("no variant {name}: {result:#}"))
}

#[test]
fn known_growth_is_recognized_with_the_exponent_inside_its_interval() {
    let project = Project::new();
    generate(&project, &["linear", "nlogn", "quadratic"]);
    // One set per variant, and one of every run by explicit ids.
    let mut ids = Vec::new();
    for v in ["linear", "nlogn", "quadratic"] {
        ids.push(freeze(&project, &["--variant", v]));
    }
    let all = project.json(&["runs", "list", "--limit", "1000"]);
    let run_ids: Vec<String> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(run_ids.len(), 3 * SIZES.len() * 2);
    let mut args = vec!["runs", "freeze"];
    args.extend(run_ids.iter().map(String::as_str));
    let whole = project.json(&args)["run_set"]["run_set_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let result = project.json(&["analyze", "scaling", &whole, "--parameter", "n"]);
    assert_eq!(result["metric"], "pyperf.work");
    assert_eq!(result["attempted"], 36);
    for (name, model, exponent) in [
        ("linear", "n", Some(1.0)),
        ("nlogn", "n_log_n", None),
        ("quadratic", "n_squared", Some(2.0)),
    ] {
        let v = variant(&result, name);
        assert_eq!(v["runs"], 12);
        let fit = &v["fit"];
        assert_eq!(fit["conclusion"]["status"], "best", "{name}: {fit:#}");
        let named = fit["conclusion"]["model"].as_str().unwrap();
        let k = &fit["power_law_exponent"];
        let (lo, hi) = (k["lower"].as_f64().unwrap(), k["upper"].as_f64().unwrap());
        match exponent {
            // Rule 2 of docs/statistics.md: the power law whose interval
            // holds the model's exponent is the same curve.
            Some(e) => {
                assert!(named == model || named == "power_law", "{name}: {named}");
                assert!(lo <= e && e <= hi, "{name}: k in [{lo}, {hi}]");
            }
            None => assert_eq!(named, model, "{name}"),
        }
        assert_eq!(fit["supported_range"]["min_n"], 16.0);
        assert_eq!(fit["supported_range"]["max_n"], 16384.0);
        // Per value: the median of two run medians, with an interval.
        let values = v["values"].as_array().unwrap();
        assert_eq!(values.len(), SIZES.len());
        for (p, n) in values.iter().zip(SIZES) {
            assert_eq!(p["n"], n as f64);
            assert_eq!(p["runs"], 2);
            let truth = curve(name, n as f64) * 1e9;
            let got = p["median"].as_f64().unwrap();
            assert!(
                (got / truth - 1.0).abs() < 0.08,
                "{name} n={n}: {got} vs {truth}"
            );
            assert_eq!(p["interval"]["reason"]["kind"], "too_few_observations");
        }
        // Hotspots: `work` grows with n; `setup` and `io` shrink.
        let hot = &v["hotspots"];
        assert_eq!(hot["status"], "available", "{hot:#}");
        assert_eq!(hot["metric"], "cpu.samples");
        let rows = hot["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{hot:#}");
        assert_eq!(rows[0]["function"], "work");
        assert!(rows[0]["q_value"].as_f64().unwrap() < 0.05);
        assert!(
            rows[0]["share_at_max_n"].as_f64().unwrap()
                > rows[0]["share_at_min_n"].as_f64().unwrap()
        );
        // Its own time (share × the run's metric) grows faster than the
        // whole: its share rises from ~6 % towards 100 % on top of the
        // metric's growth, not because a fixed cost shrinks around it.
        eprintln!("{name}: work {}", rows[0]["growth_exponent"]);
        assert_eq!(rows[0]["growth_vs_total"], "faster", "{hot:#}");
        let own = rows[0]["growth_exponent"]["lower"].as_f64().unwrap();
        let whole = v["fit"]["growth_exponent"]["estimate"].as_f64().unwrap();
        assert!(own > whole, "{own} vs {whole}");
    }
    // A single variant's set answers the same for that variant.
    let linear = project.json(&["analyze", "scaling", &ids[0], "--parameter", "n"]);
    assert_eq!(linear["variants"].as_array().unwrap().len(), 1);
    assert_eq!(
        variant(&linear, "linear")["fit"],
        variant(&result, "linear")["fit"]
    );

    // Profiles on both sides: compare lists the frame changes.
    let cmp = project.json(&[
        "analyze",
        "compare",
        &ids[2],
        &ids[0],
        "--metric",
        "pyperf.work",
    ]);
    assert_eq!(cmp["pairing"]["method"], "run_order");
    assert_eq!(cmp["profile_changes"]["status"], "available");
    // main (no self value), setup, work, io.
    assert_eq!(cmp["profile_changes"]["frames_compared"], 4);
    let top = &cmp["profile_changes"]["rows"][0];
    assert_eq!(top["function"], "work");
    assert!(top["share_delta"].as_f64().unwrap() > 0.0);

    let recorded = project.json(&["analyze", "record", &whole, "--parameter", "n"]);
    assert_eq!(recorded["record"]["kind"], "analysis");
    assert_eq!(recorded["record"]["result"], result);
    assert_eq!(recorded["record"]["coverage"]["runs_used"], 36);
}

#[test]
fn non_numeric_or_missing_parameters_are_typed_errors() {
    let project = Project::new();
    let mut noise = Noise::new(5);
    let mut runs = Vec::new();
    for (i, n) in ["10", "100", "big"].iter().enumerate() {
        let values = samples(&mut noise, 1e-3, 3, 0.01);
        let file = write_file(
            &project,
            &format!("r{i}.json"),
            &pyperf_json("work", &values),
        );
        runs.push(import_run(&project, &[file], "v", &[("n", n.to_string())]));
    }
    let set = freeze(&project, &["--variant", "v"]);
    let err = project.json_err(
        &["analyze", "scaling", &set, "--parameter", "n"],
        "INVALID_ARGUMENTS",
        2,
    );
    let bad = err["details"]["invalid_values"].as_array().unwrap();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["value"], "big");
    assert_eq!(bad[0]["run_id"], runs[2].as_str());
    let missing = project.json_err(
        &["analyze", "scaling", &set, "--parameter", "size"],
        "INVALID_ARGUMENTS",
        2,
    );
    assert_eq!(missing["details"]["parameters"], json!(["n"]));
    // Numeric but too few points for a fit: typed, says what is needed.
    let two = freeze(&project, &[&runs[0], &runs[1]]);
    let few = project.json_err(
        &["analyze", "scaling", &two, "--parameter", "n"],
        "COMPARISON_INVALID",
        6,
    );
    assert!(
        few["message"].as_str().unwrap().contains("at least 5"),
        "{few}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_set_tools_answer_over_mcp() {
    let project = Project::new();
    generate(&project, &["linear"]);
    let mut session = support::mcp::Session::start(project.path(), &[]).await;
    let frozen = session
        .ok("freeze_run_set", json!({ "variant": "linear" }))
        .await;
    let id = frozen["run_set"]["run_set_id"].as_str().unwrap().to_owned();
    assert_eq!(frozen["run_set"]["members"].as_array().unwrap().len(), 12);
    let again = session
        .ok("freeze_run_set", json!({ "variant": "linear" }))
        .await;
    assert_eq!(again["created"], false);
    let scaling = session
        .ok("analyze_scaling", json!({ "target": id, "parameter": "n" }))
        .await;
    let cli = project.json(&["analyze", "scaling", &id, "--parameter", "n"]);
    assert_eq!(scaling, cli, "the transports answer the same");
    let compared = session
        .ok(
            "compare_run_sets",
            json!({ "base": id, "target": id, "metric": "pyperf.work" }),
        )
        .await;
    assert_eq!(compared["estimate"]["relative_change"], 0.0);
    assert_eq!(compared["decision"], "inconclusive");
    let err = session
        .err(
            "analyze_scaling",
            json!({ "target": id, "parameter": "n", "confidence": 1.0 }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert_eq!(err["details"]["fields"][0]["field"], "confidence");
    let rec = session
        .ok("record_analysis", json!({ "target": id, "parameter": "n" }))
        .await;
    assert_eq!(rec["record"]["result"], scaling);
    let cmp = session
        .ok(
            "record_comparison",
            json!({ "base": id, "target": id, "metric": "pyperf.work" }),
        )
        .await;
    assert_eq!(cmp["record"]["kind"], "comparison");
    let got = session
        .ok("get_evidence", json!({ "reference": format!("analysis:{}", rec["record"]["record_id"].as_str().unwrap()) }))
        .await;
    assert_eq!(
        got["record"]["result_digest"],
        rec["record"]["result_digest"]
    );
    let resource = session
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(format!(
            "flameox://run-sets/{id}"
        )))
        .await
        .expect("run set resource");
    let text = serde_json::to_string(&resource).unwrap();
    assert!(text.contains(&id));
    assert!(
        !text.contains(project.path().to_str().unwrap()),
        "no host paths"
    );
    session.close().await;
}
