//! Agent sessions through the stdio server, one per question class, on
//! corpus traces: an agent that knows only the instructions imports the
//! trace, calls `summarize_target`, and follows the `next` calls it offers.
//! Each session must reach its answer in at most 8 calls and 30 KB of
//! results, and the answers must point at the right thing.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::mcp::Session;

/// Calls an agent may spend on one question.
const MAX_CALLS: usize = 8;
/// Bytes of results an agent may read for one question.
const MAX_BYTES: usize = 30 * 1024;

/// A session on one corpus trace, copied into a fresh project.
struct Agent {
    s: Session,
    _project: tempfile::TempDir,
    run: String,
}

impl Agent {
    async fn start(corpus_path: &str) -> Agent {
        let project = tempfile::tempdir().expect("project");
        let root = project.path().canonicalize().expect("canonical project");
        let name = Path::new(corpus_path)
            .file_name()
            .and_then(|n| n.to_str())
            .expect("file name")
            .to_owned();
        std::fs::copy(flameox_tests::corpus().join(corpus_path), root.join(&name))
            .expect("copy corpus trace");
        let mut s = Session::start(&root, &["--init"]).await;
        let imported = s.ok("import_artifact", json!({ "path": name })).await;
        let run = imported["run_id"].as_str().expect("run id").to_owned();
        Agent {
            s,
            _project: project,
            run,
        }
    }

    /// The orientation call every session starts with.
    async fn summary(&mut self) -> Value {
        self.s
            .ok("summarize_target", json!({ "target": self.run }))
            .await
    }

    /// Follows the summary's `next` call for `operation`, as offered.
    async fn follow(&mut self, summary: &Value, operation: &str) -> Value {
        let call = summary["next"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["operation"] == operation)
            .unwrap_or_else(|| panic!("the summary offers no {operation}: {summary}"));
        self.s.ok(operation, call["arguments"].clone()).await
    }

    /// Ends the session: the calls made and the bytes of results read.
    async fn finish(self, question: &str) -> (usize, usize) {
        let (_, _, transcript) = self.s.close().await;
        let bytes: usize = transcript.iter().map(String::len).sum();
        eprintln!("{question}: {} calls, {bytes} bytes", transcript.len());
        assert!(
            transcript.len() <= MAX_CALLS,
            "{question}: {} calls",
            transcript.len()
        );
        assert!(bytes <= MAX_BYTES, "{question}: {bytes} bytes of results");
        (transcript.len(), bytes)
    }
}

/// "What dominates the renderer main thread of this page load, and what
/// called it?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_main_thread_and_its_callers() {
    let mut a = Agent::start("chrome_json/chromium_headless_page_devtools.json").await;
    let summary = a.summary().await;
    let top = &summary["hot_threads"][0];
    assert_eq!(top["thread"], "CrRendererMain", "{summary}");
    // The shared name is said, so the agent knows to scope by tid.
    assert!(
        summary["shared_thread_names"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("CrRendererMain:"))),
        "{summary}"
    );
    let frame = top["frames"][0]["function"].as_str().expect("top frame");
    let callers = a.follow(&summary, "get_frame_callers").await;
    assert_eq!(callers["frame"]["function"], frame, "{callers}");
    // Scoped to the one busiest renderer main thread, and saying so.
    let threads = callers["threads"].as_array().expect("scoped threads");
    assert_eq!(threads.len(), 1, "{callers}");
    let instances = a.follow(&summary, "get_frame_instances").await;
    assert!(
        instances["returned"].as_u64().unwrap_or(0) > 0,
        "{instances}"
    );
    a.finish("browser main thread").await;
}

/// "Is the GPU well used in this PyTorch step; where is it idle and why?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_idle_in_a_pytorch_step_and_why() {
    let mut a = Agent::start("kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz").await;
    let summary = a.summary().await;
    let gpu = &summary["gpu"];
    assert!(gpu["gaps"].as_u64().unwrap_or(0) > 0, "{summary}");
    assert!(summary["pytorch_steps"]["steps"].as_u64().unwrap_or(0) > 0);
    // The longest gaps wait on the data loader of the launching thread.
    let longest = &gpu["longest"][0];
    assert!(
        longest["host_top"]
            .as_str()
            .is_some_and(|t| t.contains("DataLoader")),
        "{longest}"
    );
    assert!(
        longest["launched_by"]
            .as_str()
            .is_some_and(|l| l.contains("tid")),
        "{longest}"
    );
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    for gap in gaps["gaps"].as_array().expect("gaps") {
        assert_eq!(gap["host_scope"], "launching_thread", "{gap}");
    }
    a.finish("GPU idle in a PyTorch step").await;
}

/// "Where does this sampled CPU profile spend its time, and who calls it?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_cpu_profile_hotspot_and_callers() {
    let mut a = Agent::start("stacks/pyspy_workload.speedscope.json").await;
    let summary = a.summary().await;
    let top = &summary["hot_threads"][0];
    assert!(
        top["frames"].as_array().is_some_and(|f| !f.is_empty()),
        "{summary}"
    );
    assert_ne!(
        top["unit"], "ns",
        "a sampled profile counts samples: {summary}"
    );
    let callers = a.follow(&summary, "get_frame_callers").await;
    assert!(callers["total"].as_u64().unwrap_or(0) > 0, "{callers}");
    a.finish("sampled CPU profile").await;
}

/// "Where is this Nsight-profiled GPU idle, and what was the host doing?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nsight_export_gpu_idle() {
    let mut a = Agent::start("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite").await;
    let summary = a.summary().await;
    assert!(
        summary["gpu"]["gaps"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    assert!(gaps["has_device_activity"] == true, "{gaps}");
    a.finish("Nsight GPU idle").await;
}
