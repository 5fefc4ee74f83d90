//! Investigation memory over a real stdio server, as an agent uses it:
//! create an investigation on a corpus trace, record a hypothesis, run an
//! analysis, support the hypothesis with evidence, record a finding whose
//! number is the hotspot answer's — then a new server process resumes from
//! `list_investigations` alone and reports it as Markdown: the report's
//! number is the analysis's, and its reproduce call gives it back. Two writers revising
//! one hypothesis: one wins, the other gets `REVISION_CONFLICT` with the
//! current revision; missing evidence is refused; a decided hypothesis's
//! prediction cannot be rewritten; a hotspot finding needs the commit its
//! answer was read at.

use crate::support::mcp::Session;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

const TRACE: &str = "kineto/hta_nccl_a100_rank0of2.json.gz";

async fn resource(s: &Session, uri: String) -> Value {
    let read = s
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect("resources/read");
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("text resource expected");
    };
    serde_json::from_str(text).expect("resource json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn an_agent_resumes_an_investigation_in_a_new_server_and_stale_revisions_conflict() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path().canonicalize().expect("canonical project");
    std::fs::create_dir_all(root.join("traces")).expect("traces dir");
    std::fs::copy(
        flameox_tests::corpus().join(TRACE),
        root.join("traces/rank0.json.gz"),
    )
    .expect("copy corpus trace");

    let mut s = Session::start(&root, &[]).await;
    s.ok("initialize_workspace", json!({})).await;
    let imported = s
        .ok(
            "import_artifact",
            json!({ "path": "traces/rank0.json.gz", "kind": "execution_trace" }),
        )
        .await;
    let run_id = imported["run_id"].as_str().expect("run_id").to_owned();

    // A target that does not exist is refused, nothing is created.
    s.err(
        "create_investigation",
        json!({ "question": "why?", "target": ["run:00000000-0000-7000-8000-000000000000"] }),
        "RUN_NOT_FOUND",
    )
    .await;
    let created = s
        .ok(
            "create_investigation",
            json!({ "question": "why is step time up?", "target": [run_id.clone()], "tags": ["step-time"] }),
        )
        .await;
    let inv = created["investigation_id"]
        .as_str()
        .expect("investigation id")
        .to_owned();
    assert_eq!(created["revision"], 1);
    assert_eq!(created["targets"], json!([format!("run:{run_id}")]));

    let proposed = s
        .ok(
            "record_hypothesis",
            json!({
                "investigation_id": inv,
                "statement": "GPU kernels dominate the step",
                "prediction": "the kernel breakdown puts most of the span in kernels",
                "refuted_if": "kernels cover less than 40 % of the span",
            }),
        )
        .await;
    let hyp = proposed["hypothesis_id"].as_str().expect("hyp").to_owned();
    assert_eq!(proposed["status"], "proposed");

    // Support needs evidence; evidence must exist.
    s.err(
        "record_hypothesis",
        json!({ "hypothesis_id": hyp, "expected_revision": 1, "status": "supported" }),
        "INVALID_ARGUMENTS",
    )
    .await;
    let missing = s
        .err(
            "record_hypothesis",
            json!({ "hypothesis_id": hyp, "expected_revision": 1, "status": "supported",
                    "evidence": ["run_set:rs_missing"] }),
            "RUN_NOT_FOUND",
        )
        .await;
    assert!(
        missing["message"]
            .as_str()
            .unwrap_or("")
            .contains("rs_missing")
    );
    let summary = s.ok("summarize_target", json!({ "target": run_id })).await;
    assert!(summary.is_object());
    let supported = s
        .ok(
            "record_hypothesis",
            json!({ "hypothesis_id": hyp, "expected_revision": 1, "status": "supported",
                    "evidence": [format!("run:{run_id}")], "note": "kernels are most of the span" }),
        )
        .await;
    assert_eq!(supported["revision"], 2);
    assert_eq!(supported["history"].as_array().map(Vec::len), Some(2));

    // A second writer that read revision 1 loses and learns the current one.
    let conflict = s
        .err(
            "record_hypothesis",
            json!({ "hypothesis_id": hyp, "expected_revision": 1, "status": "refuted",
                    "evidence": [format!("run:{run_id}")] }),
            "REVISION_CONFLICT",
        )
        .await;
    assert_eq!(conflict["details"]["current_revision"], 2);
    // A hotspot finding names the run and the commit the answer was read at.
    let hotspots = s
        .ok("analyze_hotspots", json!({ "target": run_id, "limit": 3 }))
        .await;
    let commit = hotspots["commit_id"]
        .as_str()
        .expect("commit_id")
        .to_owned();
    let without_commit = s
        .err(
            "record_finding",
            json!({ "investigation_id": inv, "claim": "one kernel dominates", "level": "hotspot",
                    "references": [format!("run:{run_id}")] }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert_eq!(without_commit["details"]["level"], "hotspot");
    s.err(
        "record_finding",
        json!({ "investigation_id": inv, "claim": "slower", "level": "measured_regression",
                "references": [format!("run:{run_id}")] }),
        "INVALID_ARGUMENTS",
    )
    .await;
    // The number the claim states is the hotspot answer's own.
    let top_self_pct = hotspots["rows"][0]["self_pct"].clone();
    let finding = s
        .ok(
            "record_finding",
            json!({ "investigation_id": inv, "claim": "one kernel dominates", "level": "hotspot",
                    "references": [format!("run:{run_id}"), format!("commit:{commit}"), format!("hypothesis:{hyp}")],
                    "numbers": { "top_self_pct": top_self_pct } }),
        )
        .await;
    let fnd = finding["finding_id"]
        .as_str()
        .expect("finding id")
        .to_owned();
    assert_eq!(finding["revision"], 1);
    // A decided hypothesis keeps the prediction it was tested against.
    s.err(
        "record_hypothesis",
        json!({ "hypothesis_id": hyp, "expected_revision": 2, "prediction": "anything" }),
        "INVALID_ARGUMENTS",
    )
    .await;
    s.close().await;

    // A new server process: the agent knows nothing but the workspace.
    let mut s = Session::start(&root, &[]).await;
    let listed = s.ok("list_investigations", json!({})).await;
    assert_eq!(listed["total"], 1);
    let row = &listed["items"][0];
    assert_eq!(row["investigation_id"], inv);
    assert_eq!(row["question"], "why is step time up?");
    assert_eq!(row["by_status"], json!({ "supported": 1 }));
    let filtered = s.ok("list_investigations", json!({ "tag": "other" })).await;
    assert_eq!(filtered["total"], 0);

    let detail = s
        .ok("get_investigation", json!({ "investigation_id": inv }))
        .await;
    assert_eq!(detail["hypotheses_total"], 1);
    let h = &detail["hypotheses"][0];
    assert_eq!(h["hypothesis_id"], hyp);
    assert_eq!(h["status"], "supported");
    assert_eq!(h["revision"], 2);
    assert_eq!(h["refuted_if"], "kernels cover less than 40 % of the span");
    assert_eq!(h["evidence"], json!([format!("run:{run_id}")]));

    assert_eq!(detail["findings_total"], 1);
    assert_eq!(detail["findings"][0]["finding_id"], fnd);
    assert_eq!(
        detail["findings"][0]["numbers"]["top_self_pct"],
        top_self_pct
    );
    assert_eq!(row["findings"], 1);
    let hotspot_findings = s
        .ok(
            "list_findings",
            json!({ "investigation_id": inv, "level": "hotspot" }),
        )
        .await;
    assert_eq!(hotspot_findings["total"], 1);
    let scaling_findings = s.ok("list_findings", json!({ "level": "scaling" })).await;
    assert_eq!(scaling_findings["total"], 0);
    let got = s.ok("get_finding", json!({ "finding_id": fnd })).await;
    assert_eq!(got["references"][1], format!("commit:{commit}"));
    let as_finding = resource(&s, format!("flameox://findings/{fnd}")).await;
    assert_eq!(as_finding["level"], "hotspot");

    // The same records as resources and by typed reference.
    let as_resource = resource(&s, format!("flameox://investigations/{inv}")).await;
    assert_eq!(as_resource["hypotheses"][0]["hypothesis_id"], hyp);
    let hyp_resource = resource(&s, format!("flameox://hypotheses/{hyp}")).await;
    assert_eq!(hyp_resource["revision"], 2);
    let by_reference = s
        .ok(
            "get_evidence",
            json!({ "reference": format!("hypothesis:{hyp}") }),
        )
        .await;
    assert_eq!(by_reference["record"]["status"], "supported");
    // The resumed agent reports it: the report's number is the hotspot
    // answer's, and its reproduce command, run again now, gives it back.
    let report = s
        .ok(
            "summarize_evidence",
            json!({ "targets": [inv.clone()], "format": "markdown" }),
        )
        .await;
    let reported = &report["findings"][0];
    assert_eq!(reported["numbers"]["top_self_pct"], top_self_pct);
    let reproduce = &reported["references"][0]["reproduce"];
    assert_eq!(reproduce["operation"], "analyze_hotspots");
    let again = s
        .ok("analyze_hotspots", reproduce["arguments"].clone())
        .await;
    assert_eq!(again["rows"][0]["self_pct"], top_self_pct);
    let markdown = report["markdown"].as_str().expect("markdown");
    assert!(markdown.contains("## why is step time up?"), "{markdown}");
    assert!(
        markdown.contains(&format!("flameox analyze hotspots {run_id}")),
        "{markdown}"
    );
    s.close().await;

    // Every revision is its own file; nothing was rewritten.
    let dir = root.join(".flameox/records/hypotheses").join(&hyp);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("hypothesis folder")
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    files.sort();
    assert_eq!(files, ["000001.json", "000002.json"]);
}
