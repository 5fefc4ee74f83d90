//! Rank-parallel import through the real binary: a generated multi-rank
//! Kineto job extracted on several threads (`import.parallel_inputs`) is
//! the same run as one extracted file by file (artifacts in order, rows,
//! ranks, a GPU answer); one broken rank among many fails the import
//! naming it with nothing published; a job of many more rank files than
//! the process may open files still imports (inputs are stored as the
//! workers reach them, not all at once).

use crate::support;

use std::path::Path;
use std::process::Command;

use flameox_tests::{Project, flameox_bin};
use serde_json::Value;

fn write_job(dir: &Path, ranks: u64, events: u64) {
    flameox_tests::write_kineto_job(dir, ranks, events, 31);
}

/// A project whose imports extract `workers` inputs at once.
fn project_with_workers(workers: u64) -> Project {
    let project = Project::new();
    let config = project.path().join(".flameox/config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.contains("parallel_inputs = 0"), "{text}");
    let text = text.replace(
        "parallel_inputs = 0",
        &format!("parallel_inputs = {workers}"),
    );
    std::fs::write(&config, text).expect("config");
    project
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The parts of a run and its GPU summary that say what was imported
/// (not when, or under which ids).
fn evidence_of(project: &Project, imported: &Value) -> Value {
    let run = imported["run_id"].as_str().expect("run");
    let shown = project.json(&["runs", "show", run]);
    let summary = project.json(&["analyze", "gpu-summary", run]);
    serde_json::json!({
        "artifacts": imported["artifacts"].as_array().expect("artifacts").iter()
            .map(|a| serde_json::json!([a["artifact_id"], a["original_name"], a["rows"]]))
            .collect::<Vec<_>>(),
        "rows": imported["rows"],
        "ranks": shown["metadata"]["ranks"],
        "gpu": [summary["by_family"], summary["families"], summary["grand_total"], summary["total"]],
    })
}

#[test]
fn ranks_extracted_at_once_are_the_same_run_as_one_by_one() {
    let job = tempfile::tempdir().expect("job");
    write_job(job.path(), 12, 6_000);
    let serial = project_with_workers(1);
    let one_by_one = serial.json(&["import", path_str(job.path())]);
    let parallel = project_with_workers(4);
    let at_once = parallel.json(&["import", path_str(job.path())]);
    assert_eq!(at_once["artifacts"].as_array().map(Vec::len), Some(12));
    let expected = evidence_of(&serial, &one_by_one);
    assert_eq!(
        expected["ranks"],
        serde_json::json!((0..12).collect::<Vec<_>>())
    );
    assert!(expected["gpu"][3].as_u64().unwrap_or(0) > 0, "{expected}");
    assert_eq!(evidence_of(&parallel, &at_once), expected);
    let validated = parallel.json(&["validate", "--full"]);
    assert_eq!(validated["ok"], true, "{validated}");
    assert_eq!(parallel.staging_entries(), 0);
}

#[test]
fn one_broken_rank_among_many_fails_naming_it_and_publishes_nothing() {
    let job = tempfile::tempdir().expect("job");
    write_job(job.path(), 10, 3_000);
    // Detected as Chrome JSON by its start, then not a trace.
    std::fs::write(
        job.path().join("rank3.pt.trace.json"),
        br#"{"traceEvents": [{"ph": "X", "name": "cut", "ts": 1"#,
    )
    .expect("broken rank");
    let project = project_with_workers(3);
    let out = project
        .command(&["import", path_str(job.path()), "--json"])
        .output()
        .expect("flameox");
    let err: Value = serde_json::from_slice(&out.stdout).expect("one JSON answer");
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert_eq!(err["code"], "ARTIFACT_PARSE_FAILED", "{err}");
    let message = err["message"].as_str().expect("message");
    assert!(message.starts_with("rank3.pt.trace.json: "), "{message}");
    assert_eq!(project.head(), None);
    assert_eq!(project.staging_entries(), 0);
    assert_eq!(project.json(&["runs", "list"])["total"], 0);
}

#[test]
fn more_rank_files_than_open_files_allowed_still_import() {
    let job = tempfile::tempdir().expect("job");
    let ranks = 160;
    write_job(job.path(), ranks, 150);
    let project = project_with_workers(2);
    // 64 open files for the whole process: storing every input at once
    // (an input and a copy each) would run out long before the last rank.
    let out = Command::new("bash")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(flameox_bin())
        .args(["import", path_str(job.path()), "--json"])
        .current_dir(project.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("flameox");
    let imported: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.code(), Some(0), "{imported}");
    assert_eq!(project.staging_entries(), 0);
    // The answer lists the first 20 artifacts and says how to page them all.
    assert_eq!(imported["artifacts_total"], ranks);
    assert_eq!(imported["artifacts"].as_array().map(Vec::len), Some(20));
    let run = imported["run_id"].as_str().expect("run");
    assert_eq!(imported["more_artifacts"]["operation"], "list_artifacts");
    assert_eq!(imported["more_artifacts"]["arguments"]["run"], run);
    let shown = project.json(&["runs", "show", run]);
    assert_eq!(
        shown["metadata"]["ranks"],
        serde_json::json!((0..ranks).collect::<Vec<_>>())
    );
    assert_eq!(shown["artifacts_total"], ranks);
    assert_eq!(shown["artifacts"].as_array().map(Vec::len), Some(20));
    assert_eq!(shown["generations_total"], ranks);
    let shown_bytes = serde_json::to_vec(&shown).expect("json").len();
    assert!(shown_bytes < 40_000, "runs show is {shown_bytes} bytes");
    // Paged in run order, each row with its rank.
    let mut ranks_listed = Vec::new();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["artifacts", "list", "--run", run, "--limit", "100"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = project.json(&args);
        assert_eq!(page["total"], ranks, "{page}");
        for row in page["items"].as_array().expect("items") {
            ranks_listed.push(row["rank"].as_u64().expect("rank"));
            names.push(row["original_name"].as_str().expect("name").to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(ranks_listed, (0..ranks).collect::<Vec<_>>());
    assert_eq!(names[10], "rank10.pt.trace.json", "natural order");
    // A person reads the first 20 and the command for the rest.
    let again = project.run(&["import", path_str(job.path())]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.starts_with("imported 160 artifacts"), "{text}");
    assert!(
        text.contains("  … 140 more: flameox artifacts list --limit 100 --run "),
        "{text}"
    );
    // The whole workspace's listing is another listing: its cursor is refused here.
    let all = project.json(&["artifacts", "list", "--limit", "5"]);
    let foreign = all["next_cursor"].as_str().expect("more than 5 artifacts");
    project.json_err(
        &["artifacts", "list", "--run", run, "--cursor", foreign],
        "STALE_CURSOR",
        7,
    );
}

/// A folder import killed while its ranks are staged (two at once) leaves
/// its locked staging folder; the next writer removes it, nothing of the
/// killed import is visible, and the workspace validates.
#[test]
fn a_killed_rank_parallel_import_leaves_nothing_the_next_writer_keeps() {
    use std::io::{BufRead, BufReader};
    let job = tempfile::tempdir().expect("job");
    write_job(job.path(), 6, 3_000);
    let project = project_with_workers(2);
    let mut child = project
        .command(&["import", path_str(job.path())])
        .env("FLAMEOX_TEST_PAUSE_AT", "staged")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("flameox");
    let stderr = child.stderr.take().expect("stderr");
    let mut reader = BufReader::new(stderr);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("stderr line");
        assert!(n > 0, "the import ended before staging a rank");
        if line.contains("paused at staged") {
            break;
        }
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
    assert_eq!(project.head(), None);
    // The import's folder (and any rank copy still in flight).
    assert!(project.staging_entries() >= 1);
    let other = tempfile::tempdir().expect("other job");
    std::fs::copy(
        job.path().join("rank0.pt.trace.json"),
        other.path().join("a.json"),
    )
    .expect("copy");
    std::fs::copy(
        job.path().join("rank1.pt.trace.json"),
        other.path().join("b.json"),
    )
    .expect("copy");
    let next = project.json(&["import", path_str(other.path())]);
    assert_eq!(next["artifacts"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        project.staging_entries(),
        0,
        "the dead import's folder is gone"
    );
    let report = project.json(&["validate", "--full"]);
    assert_eq!(report["ok"], true, "{report}");
}

/// An agent imports a 48-rank job and follows the answer: the import and
/// `get_run` answers stay small (20 artifacts listed, 21 resource links),
/// and the `more_artifacts` call it was handed pages every rank in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_pages_a_many_rank_run_with_the_call_it_was_handed() {
    use support::mcp::{Session, structured};
    let project = Project::new();
    // An agent reads inside its project.
    let job = project.path().join("ranks");
    std::fs::create_dir(&job).expect("job folder");
    let ranks = 48;
    write_job(&job, ranks, 300);
    let mut s = Session::start(project.path(), &[]).await;
    let imported = s
        .ok("import_artifact", serde_json::json!({ "path": "ranks" }))
        .await;
    assert_eq!(imported["artifacts_total"], ranks);
    assert_eq!(imported["artifacts"].as_array().map(Vec::len), Some(20));
    let import_bytes = serde_json::to_vec(&imported).expect("json").len();
    assert!(
        import_bytes < 30_000,
        "import answer is {import_bytes} bytes"
    );
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let shown = s
        .call("get_run", serde_json::json!({ "target": run }))
        .await;
    let links = shown
        .content
        .iter()
        .filter(|c| c.as_resource_link().is_some())
        .count();
    assert_eq!(links, 21, "the run and its first 20 artifacts");
    let shown = structured(&shown);
    assert_eq!(shown["result"]["artifacts_total"], ranks, "{shown}");
    // The handed call, as given, then its cursor.
    let more = &imported["more_artifacts"];
    let mut args = more["arguments"].clone();
    let mut listed = Vec::new();
    loop {
        let page = s
            .ok(more["operation"].as_str().expect("op"), args.clone())
            .await;
        listed.extend(
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|row| row["rank"].as_u64().expect("rank")),
        );
        match page["next_cursor"].as_str() {
            Some(c) => args["cursor"] = serde_json::json!(c),
            None => break,
        }
    }
    assert_eq!(listed, (0..ranks).collect::<Vec<_>>());
}
