//! `summarize_evidence` as an agent and a person use it: a measured
//! regression between two generated run sets (candidate 15 % slower, 2 %
//! noise, paired by block), recorded as a comparison, claimed by a finding
//! and reported. The report's numbers are the comparison's own, its
//! Markdown names the claim, the hypothesis's fate and the reproduce
//! command — and that command, run as printed, gives the same estimate.
//! A frame finding names its frame, which is checked against the evidence.

use crate::support;

use flameox_tests::Project;
use flameox_tests::generated_runs::{Noise, import_run, pyperf_json, samples, write_file};
use serde_json::{Value, json};

/// Five blocks, each a baseline and a candidate run (`block` parameter).
fn generate(project: &Project) {
    let mut noise = Noise::new(7);
    for block in 0..5 {
        for (variant, center) in [("baseline", 0.100), ("candidate", 0.115)] {
            let run_center = center * noise.factor(0.02);
            let values = samples(&mut noise, run_center, 5, 0.01);
            let stem = format!("{variant}-{block}");
            let bench = write_file(
                project,
                &format!("{stem}.json"),
                &pyperf_json("step", &values),
            );
            let folded = format!("main;step;matmul {}\nmain;step;io 100\n", 900 + block);
            let stacks = write_file(project, &format!("{stem}.folded"), &folded);
            import_run(
                project,
                &[bench, stacks],
                variant,
                &[("block", block.to_string())],
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_states_the_comparisons_numbers_and_its_commands_reproduce_them() {
    let project = Project::new();
    generate(&project);
    let mut s = support::mcp::Session::start(project.path(), &[]).await;
    let base = s
        .ok("freeze_run_set", json!({ "variant": "baseline" }))
        .await["run_set"]["run_set_id"]
        .as_str()
        .expect("base set")
        .to_owned();
    let target = s
        .ok("freeze_run_set", json!({ "variant": "candidate" }))
        .await["run_set"]["run_set_id"]
        .as_str()
        .expect("target set")
        .to_owned();
    let recorded = s
        .ok(
            "record_comparison",
            json!({ "base": base, "target": target, "metric": "pyperf.step" }),
        )
        .await;
    let record = &recorded["record"];
    let comparison = record["record_id"].as_str().expect("record id").to_owned();
    let estimate = record["result"]["estimate"].clone();
    assert_eq!(record["result"]["decision"], "regression", "{record}");
    let change = estimate["relative_change"].as_f64().expect("change");
    assert!((0.10..0.20).contains(&change), "{change}");

    let inv = s
        .ok(
            "create_investigation",
            json!({ "question": "why is step time up?", "target": [format!("run_set:{target}")] }),
        )
        .await["investigation_id"]
        .as_str()
        .expect("inv")
        .to_owned();
    let hyp = s
        .ok(
            "record_hypothesis",
            json!({ "investigation_id": inv, "statement": "the candidate's step is slower",
                    "prediction": "pyperf.step is at least 5 % higher over paired blocks",
                    "refuted_if": "the interval includes no change" }),
        )
        .await["hypothesis_id"]
        .as_str()
        .expect("hyp")
        .to_owned();
    s.ok(
        "record_hypothesis",
        json!({ "hypothesis_id": hyp, "expected_revision": 1, "status": "supported",
                "evidence": [format!("comparison:{comparison}")] }),
    )
    .await;
    let finding = s
        .ok(
            "record_finding",
            json!({ "investigation_id": inv, "claim": "step time is up by about 15 %",
                    "level": "measured_regression",
                    "references": [format!("comparison:{comparison}")],
                    "numbers": { "step_relative_change": change } }),
        )
        .await;
    let fnd = finding["finding_id"].as_str().expect("fnd").to_owned();

    // A frame reference is looked up in the evidence: a misspelt frame is
    // refused with the closest names, nothing is written.
    let a_run = s.ok("list_runs", json!({ "limit": 1 })).await["items"][0]["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let wrong = s
        .err(
            "record_finding",
            json!({ "investigation_id": inv, "claim": "matmul is the hot frame", "level": "observation",
                    "references": [format!("frame:{a_run}@matmull")] }),
            "FRAME_NOT_FOUND",
        )
        .await;
    assert_eq!(wrong["details"]["closest"][0], "matmul", "{wrong}");
    let frame_finding = s
        .ok(
            "record_finding",
            json!({ "investigation_id": inv, "claim": "matmul is the hot frame", "level": "observation",
                    "references": [format!("frame:{a_run}@matmul")] }),
        )
        .await;
    assert_eq!(
        frame_finding["references"][0],
        format!("frame:{a_run}@matmul")
    );

    // The investigation lists the records it and its parts name.
    let detail = s
        .ok("get_investigation", json!({ "investigation_id": inv }))
        .await;
    assert_eq!(
        detail["records"],
        json!([
            format!("run_set:{target}"),
            format!("comparison:{comparison}")
        ])
    );

    // A measurement query is a reference too; one that finds nothing is refused.
    s.err(
        "record_finding",
        json!({ "investigation_id": inv, "claim": "steps measured", "level": "observation",
                "references": [format!("measurements:{a_run}@pyperf.nothing")] }),
        "METRIC_NOT_FOUND",
    )
    .await;
    let measured = s
        .ok(
            "record_finding",
            json!({ "investigation_id": inv, "claim": "steps were measured", "level": "observation",
                    "references": [format!("measurements:{a_run}@pyperf.step")] }),
        )
        .await;
    let measured_id = measured["finding_id"].as_str().expect("fnd").to_owned();

    let report = s
        .ok(
            "summarize_evidence",
            json!({ "targets": [inv], "format": "markdown" }),
        )
        .await;
    assert_eq!(report["findings_total"], 3);
    let query = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["finding_id"] == measured_id.as_str())
        .expect("the measurement finding");
    assert_eq!(
        query["references"][0]["reproduce"]["operation"],
        "query_measurements"
    );
    let reported = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["finding_id"] == fnd.as_str())
        .expect("the regression finding");
    let reference = &reported["references"][0];
    // The record's numbers, exactly: nothing retyped or rounded.
    assert_eq!(
        reference["numbers"]["relative_change"],
        estimate["relative_change"]
    );
    assert_eq!(
        reference["numbers"]["relative_interval_lower"],
        estimate["relative_interval"]["lower"]
    );
    assert_eq!(reported["numbers"]["step_relative_change"], json!(change));
    let command = reference["reproduce"]["command"]
        .as_str()
        .expect("command")
        .to_owned();
    assert!(command.starts_with("flameox analyze compare "), "{command}");
    let markdown = report["markdown"].as_str().expect("markdown");
    for expected in [
        "## why is step time up?",
        "| **supported** | the candidate's step is slower",
        "**1. step time is up by about 15 %**",
        &format!("{:+.1} %", change * 100.0),
        &command,
        "```sh",
    ] {
        assert!(
            markdown.contains(expected),
            "{expected:?} missing:\n{markdown}"
        );
    }
    // JSON: the same content without the Markdown.
    let json_report = s
        .ok(
            "summarize_evidence",
            json!({ "targets": [format!("finding:{fnd}")], "format": "json" }),
        )
        .await;
    assert!(json_report["markdown"].is_null());
    assert_eq!(json_report["findings_total"], 1);
    assert_eq!(json_report["findings"][0], *reported);
    // A target that is not there: the closest ids.
    let missing = s
        .err(
            "summarize_evidence",
            json!({ "targets": [format!("{}x", &inv[..inv.len() - 1])] }),
            "RUN_NOT_FOUND",
        )
        .await;
    assert_eq!(missing["details"]["closest"][0], inv.as_str());
    s.close().await;

    // The printed command, run as printed, gives the same estimate.
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let rerun: Value = project.json(&words);
    assert_eq!(rerun["estimate"], estimate);
    // The terminal prints the Markdown itself.
    let printed = project.run(&["evidence", "summarize", &inv]);
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(printed.contains("## why is step time up?"), "{printed}");
}
