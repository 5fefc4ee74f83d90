//! `gc`, `repair` and `catalog rebuild` on a workspace with every kind of
//! leftover: crashed staging, a generation superseded by a newer extractor
//! version, a generation no commit lists, an artifact nothing names and an
//! artifact only a finding names. The dry-run lists exactly the eligible
//! ones and changes nothing; apply then restore gives back the same bytes
//! (`validate --full` passes throughout); purge removes only its own
//! collection; a finding's artifact and a record's commit are kept.
//! Repair plans before it acts and drops a damaged generation; rebuild
//! makes a lost HEAD again. None of this is an MCP tool.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use flameox_engine::Workspace;
use flameox_engine::catalog::{self, OperationKey};
use flameox_engine::publish::publish_extraction;
use flameox_extractors::{ExtractOptions, NoObserver, extract_folded_stacks};
use flameox_tests::Project;
use serde_json::Value;

/// Every file under `.flameox/` but logs and locks → its bytes' digest.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).expect("read dir").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(base)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            if rel.starts_with("logs") || rel.starts_with("locks") {
                continue;
            }
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.insert(rel, fs::read(&path).expect("read file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn folded(project: &Project, name: &str, text: &str) -> PathBuf {
    let path = project.path().join(name);
    fs::write(&path, text).expect("write input");
    path
}

/// An artifact stored an hour ago with no run (an import that died
/// before writing its run).
fn stored_without_run(ws: &Workspace, path: &Path) -> String {
    let record = flameox_engine::store::store_file(ws, path, "stack_profile").expect("store");
    let hex = record.artifact_id.trim_start_matches("sha256:");
    let meta = ws
        .dir()
        .join("artifacts/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("artifact.json");
    fs::File::options()
        .write(true)
        .open(&meta)
        .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(3600)))
        .expect("age the artifact");
    record.artifact_id
}

/// Publishes the run's artifact again as a newer extractor version would:
/// the import's generation is superseded.
fn re_extract(ws: &Workspace, run_id: &str) -> String {
    let head = catalog::pin_head(ws).expect("head");
    let old = head.generations[0].clone();
    let payload = flameox_engine::store::payload_path(
        ws,
        &flameox_engine::store::read_artifact(ws, &old.inputs.artifact_id).expect("artifact"),
    );
    let operation = OperationKey {
        extractor_version: format!("{}-next", old.operation.extractor_version),
        ..old.operation.clone()
    };
    let outcome = publish_extraction(ws, operation, run_id, |sink, _| {
        let reader = std::io::BufReader::new(fs::File::open(&payload).expect("payload"));
        let options = ExtractOptions::new(run_id, old.inputs.artifact_id.clone());
        extract_folded_stacks(reader, &options, sink, &NoObserver)
            .map_err(|e| flameox_engine::FlameoxError::internal(e.to_string()))
    })
    .expect("re-extract");
    assert_ne!(outcome.generation.generation_id, old.generation_id);
    old.generation_id
}

fn paths(plan: &Value) -> Vec<String> {
    let mut out: Vec<String> = plan["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path").to_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn gc_lists_exactly_the_leftovers_and_apply_then_restore_gives_the_workspace_back() {
    let project = Project::new();
    let root = project.path().join(".flameox");
    let kept = folded(&project, "kept.folded", "main;work 900\nmain;io 100\n");
    let run = project.json(&["import", kept.to_str().expect("utf8")])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let ws = Workspace::open(&root).expect("open");
    let superseded = re_extract(&ws, &run);
    let orphan_artifact = stored_without_run(&ws, &folded(&project, "lost.folded", "a;b 1\n"));
    let finding_artifact = stored_without_run(&ws, &folded(&project, "cited.folded", "c;d 2\n"));
    // Crashed staging, and a generation no commit lists.
    fs::create_dir_all(root.join("staging/import-crashed")).expect("staging");
    fs::write(root.join("staging/import-crashed/part.tmp"), b"half").expect("staging file");
    let stray = "01936f2e-0000-7000-8000-000000000001";
    fs::create_dir_all(root.join("generations").join(stray)).expect("stray");
    fs::write(
        root.join("generations").join(stray).join("manifest.json"),
        b"{}",
    )
    .expect("m");
    let stray_files = root.join(format!("evidence/trace_events/generation={stray}"));
    fs::create_dir_all(&stray_files).expect("stray evidence");
    fs::write(stray_files.join("part-00000.parquet"), b"PAR1").expect("stray file");
    // A finding names the second stored artifact (and the run's commit).
    let inv = project.json(&[
        "investigations",
        "create",
        "--question",
        "where does time go?",
    ])["investigation_id"]
        .as_str()
        .expect("inv")
        .to_owned();
    let head = project.head().expect("head");
    project.json(&[
        "findings",
        "record",
        "--investigation-id",
        &inv,
        "--claim",
        "cited input",
        "--level",
        "observation",
        "--references",
        &format!("artifact:{finding_artifact}"),
        "--references",
        &format!("commit:{head}"),
    ]);

    let before = tree(&root);
    let plan = project.json(&["gc"]);
    let hex = |id: &str| id.trim_start_matches("sha256:").to_owned();
    let orphan_hex = hex(&orphan_artifact);
    let superseded_files: Vec<String> = fs::read_dir(root.join("evidence"))
        .expect("evidence")
        .flatten()
        .filter_map(|t| {
            let dir = t.path().join(format!("generation={superseded}"));
            dir.exists().then(|| {
                format!(
                    "evidence/{}/generation={superseded}",
                    t.file_name().to_string_lossy()
                )
            })
        })
        .collect();
    assert!(!superseded_files.is_empty());
    let mut expected = vec![
        "staging/import-crashed".to_owned(),
        format!("generations/{superseded}"),
        format!("generations/{stray}"),
        format!("evidence/trace_events/generation={stray}"),
        format!("artifacts/sha256/{}/{orphan_hex}", &orphan_hex[..2]),
    ];
    expected.extend(superseded_files);
    expected.sort();
    assert_eq!(paths(&plan), expected, "{plan:#}");
    let kinds: BTreeMap<String, String> = plan["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or("").to_owned(),
                e["kind"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        kinds[&format!("generations/{superseded}")],
        "superseded_generation"
    );
    assert_eq!(kinds[&format!("generations/{stray}")], "orphan_generation");
    assert_eq!(kinds["staging/import-crashed"], "staging");
    // Kept: the artifact only the finding names, with who keeps it.
    let finding_hex = hex(&finding_artifact);
    let kept_entry = plan["kept"]
        .as_array()
        .expect("kept")
        .iter()
        .find(|k| {
            k["path"]
                .as_str()
                .is_some_and(|p| p.ends_with(&finding_hex))
        })
        .expect("the cited artifact is kept");
    assert!(
        kept_entry["kept_by"][0]
            .as_str()
            .is_some_and(|k| k.starts_with("records/findings/")),
        "{kept_entry}"
    );
    assert_eq!(plan["roots"]["pinned_commits"][0], head.as_str());
    assert_eq!(tree(&root), before, "the dry-run changed nothing");

    let applied = project.json(&["gc", "--apply"]);
    assert_eq!(applied["moved"], expected.len());
    let manifest = applied["manifest"].as_str().expect("manifest").to_owned();
    for path in &expected {
        assert!(!root.join(path).exists(), "{path} still there");
        assert!(
            root.join(Path::new(&manifest).parent().expect("dir"))
                .join("files")
                .join(path)
                .exists()
        );
    }
    assert_eq!(project.json(&["validate", "--full"])["ok"], true);
    // The run still answers from the newer generation; nothing is left to collect.
    let hot = project.json(&["analyze", "hotspots", &run]);
    assert_eq!(hot["rows"][0]["function"], "work");
    assert_eq!(paths(&project.json(&["gc"])), Vec::<String>::new());

    let restored = project.json(&["gc", "--restore", &format!(".flameox/{manifest}")]);
    assert_eq!(restored["entries"], expected.len());
    assert_eq!(tree(&root), before, "restore gives back every byte");
    assert_eq!(project.json(&["validate", "--full"])["ok"], true);

    // Two collections; purging one leaves the other restorable.
    let first = project.json(&["gc", "--apply"])["manifest"]
        .as_str()
        .expect("m")
        .to_owned();
    fs::create_dir_all(root.join("staging/import-crashed-again")).expect("staging");
    let second = project.json(&["gc", "--apply"])["manifest"]
        .as_str()
        .expect("m")
        .to_owned();
    let early = project.json_err(
        &["gc", "--purge", &format!(".flameox/{first}")],
        "INVALID_ARGUMENTS",
        2,
    );
    assert!(
        early["message"]
            .as_str()
            .unwrap_or("")
            .contains("restorable"),
        "{early}"
    );
    project.json(&["gc", "--purge", &format!(".flameox/{first}"), "--force"]);
    assert!(!root.join(&first).exists());
    assert!(
        root.join(&second).exists(),
        "purge touched another collection"
    );
    project.json(&["gc", "--restore", &format!(".flameox/{second}")]);
    assert!(root.join("staging/import-crashed-again").exists());
    // gc, repair and rebuild are the terminal's alone.
    assert!(
        flameox_engine::operations::catalog()
            .iter()
            .all(|op| !matches!(op.cli.first(), Some(&"gc" | &"repair" | &"catalog")))
    );
}

#[test]
fn repair_plans_then_drops_a_damaged_generation_and_rebuild_restores_a_lost_head() {
    let project = Project::new();
    let root = project.path().join(".flameox");
    let a = folded(&project, "a.folded", "main;work 900\nmain;io 100\n");
    let b = folded(&project, "b.folded", "main;parse 50\n");
    let run_a = project.json(&["import", a.to_str().expect("utf8")])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    project.json(&["import", b.to_str().expect("utf8")]);
    let ws = Workspace::open(&root).expect("open");
    let snapshot = catalog::pin_head(&ws).expect("head");
    assert_eq!(snapshot.generations.len(), 2);

    // A lost HEAD: rebuild finds the same two generations.
    let head = project.head().expect("head");
    fs::remove_file(root.join("corpus/HEAD")).expect("lose HEAD");
    let dry = project.json(&["catalog", "rebuild", "--dry-run"]);
    assert_eq!(dry["changed"], true);
    assert!(!root.join("corpus/HEAD").exists(), "dry run wrote nothing");
    let rebuilt = project.json(&["catalog", "rebuild"]);
    let mut expected: Vec<String> = snapshot
        .generations
        .iter()
        .map(|g| g.generation_id.clone())
        .collect();
    expected.sort();
    assert_eq!(rebuilt["active_generations"], serde_json::json!(expected));
    assert_ne!(
        rebuilt["head"],
        head.as_str(),
        "a new commit, same generations"
    );
    assert_eq!(project.json(&["validate", "--full"])["ok"], true);
    assert_eq!(project.json(&["catalog", "rebuild"])["changed"], false);

    // Damage one of run a's evidence files: repair plans, then acts.
    let damaged = snapshot
        .generations
        .iter()
        .find(|g| g.inputs.run_id == run_a)
        .expect("run a's generation");
    let file = root.join(&damaged.files[0].path);
    let mut bytes = fs::read(&file).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&file, &bytes).expect("flip a byte");
    let before = tree(&root);
    let plan = project.json(&["repair"]);
    let actions = plan["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 1, "{plan:#}");
    assert_eq!(actions[0]["action"], "drop_generation");
    assert_eq!(actions[0]["target"], damaged.generation_id.as_str());
    assert_eq!(tree(&root), before, "planning changed nothing");
    let plan_path = format!(".flameox/{}", plan["path"].as_str().expect("path"));
    let outcome = project.json(&["repair", &plan_path]);
    assert_eq!(outcome["applied"].as_array().map(Vec::len), Some(1));
    assert_eq!(outcome["valid"], true);
    assert_eq!(project.json(&["validate", "--full"])["ok"], true);
    let run = project.json(&["runs", "show", &run_a]);
    assert_eq!(run["status"]["validation"], "failed");
    assert!(
        run["limitations"].to_string().contains("dropped by repair"),
        "{run}"
    );
    // The same plan again: HEAD moved, it is refused.
    project.json_err(&["repair", &plan_path], "REVISION_CONFLICT", 7);
}
