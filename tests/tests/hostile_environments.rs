//! Hostile environments get clear errors (issue 25), proven with the real
//! binary: a full disk, a read-only workspace, an input this user may not
//! read, a workspace or manifest written by a newer flameox, and an invalid
//! `flameox.toml`. Each case checks what was refused (exit code, error code,
//! a message naming the problem) and what was kept (HEAD, empty staging, a
//! workspace that still validates).
//!
//! An input that changes while it is read is covered where the copy is made:
//! `a_file_that_changes_during_the_import_is_an_integrity_failure` in
//! `engine/src/store_in_flight.rs`.
//!
//! The disk and read-only cases mount a small tmpfs and the permission case
//! runs the child as `nobody`; both need root. Without it (or without
//! `mount` / `setpriv` / `runuser`) those tests say why and pass vacuously.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flameox_tests::{Project, corpus, flameox_bin};
use serde_json::Value;

// ---------------------------------------------------------------- helpers

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A tmpfs mounted on a fresh folder, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (with the reason printed) when this environment cannot mount.
    fn mount(size: &str) -> Option<Tmpfs> {
        if !is_root() {
            eprintln!("SKIP: mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().expect("mount point");
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            Ok(o) => {
                eprintln!(
                    "SKIP: cannot mount a tmpfs here: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                None
            }
            Err(e) => {
                eprintln!("SKIP: no mount command: {e}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(self.path())
            .status()
            .expect("mount -o remount");
        assert!(status.success(), "remount {options} failed");
    }

    /// A scratch project (initialized) inside the mount.
    fn project(&self) -> Project {
        let project = Project {
            dir: tempfile::tempdir_in(self.path()).expect("project folder"),
        };
        project.json(&["init"]);
        project
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

fn small_trace() -> String {
    corpus()
        .join("kineto/kineto_h100_out_of_order_after_fix.json")
        .to_string_lossy()
        .into_owned()
}

/// A Chrome JSON trace of about `events` × 120 bytes at `path`.
fn write_trace(path: &Path, events: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("trace file"));
    out.write_all(b"{\"traceEvents\":[").unwrap();
    for i in 0..events {
        if i > 0 {
            out.write_all(b",").unwrap();
        }
        write!(
            out,
            "{{\"name\":\"frame_{}\",\"ph\":\"X\",\"ts\":{},\"dur\":5,\"pid\":1,\"tid\":{},\
             \"cat\":\"cpu_op\",\"args\":{{\"n\":{i}}}}}",
            i % 997,
            i * 10,
            1 + i % 4
        )
        .unwrap();
    }
    out.write_all(b"]}").unwrap();
    out.flush().unwrap();
}

/// The first JSON document on stdout (an error object, or a report).
fn first_json(out: &Output) -> Value {
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| {
            panic!(
                "stdout is not JSON: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// Runs with `--json`, expects a refusal with `code` and `exit`.
fn refused(out: &Output, code: &str, exit: i32) -> Value {
    let body = first_json(out);
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(out.status.code(), Some(exit), "{body}");
    body
}

fn assert_valid(project: &Project) {
    let report = project.json(&["validate"]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["staging_entries"], 0, "{report}");
}

fn text(value: &Value) -> String {
    value.to_string().to_lowercase()
}

/// Grows `path` until the file system is full, then gives back `keep`
/// bytes, so the next write larger than `keep` fails with ENOSPC.
fn fill_disk(path: &Path, keep: u64) {
    let mut file = std::fs::File::create(path).expect("filler");
    let block = vec![0u8; 256 * 1024];
    let mut written: u64 = 0;
    loop {
        match file.write(&block) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(_) => break,
        }
    }
    let _ = file.sync_all();
    file.set_len(written.saturating_sub(keep))
        .expect("shrink filler");
}

// ---------------------------------------------------------------- 1. disk full

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_full_disk_is_a_typed_quota_error_and_the_next_import_after_freeing_space_works() {
    let Some(mount) = Tmpfs::mount("12m") else {
        return;
    };
    let project = mount.project();
    project.json(&["import", &small_trace()]);
    let head = project.head();
    assert!(head.is_some());
    let inputs = tempfile::tempdir().unwrap();
    let big = inputs.path().join("big_trace.json");
    write_trace(&big, 20_000); // ~2.4 MB, outside the full disk
    let big = big.to_string_lossy().into_owned();
    let filler = mount.path().join("filler.bin");

    // Whatever step runs out of space (copy, Parquet, manifests), the
    // refusal is the same typed error and nothing is published.
    for keep in [0u64, 64 * 1024, 512 * 1024] {
        fill_disk(&filler, keep);
        let out = project.run(&["import", &big, "--json"]);
        let err = refused(&out, "STORAGE_QUOTA_EXCEEDED", 5);
        assert!(
            text(&err["message"]).contains("no space left"),
            "keep={keep}: {err}"
        );
        assert!(
            text(&err["remediation"]).contains("free disk space"),
            "keep={keep}: {err}"
        );
        assert_eq!(err["details"]["resource"], "disk_space", "{err}");
        assert_eq!(err["retryable"], false);
        assert!(
            !err["message"]
                .as_str()
                .unwrap_or("")
                .contains(&*mount.path().to_string_lossy()),
            "no host path in the message: {err}"
        );
        assert_eq!(project.head(), head, "keep={keep}: HEAD must not move");
        assert_eq!(
            project.staging_entries(),
            0,
            "keep={keep}: staging left behind"
        );
        std::fs::remove_file(&filler).expect("free the space");
        assert_valid(&project);
    }

    // Space freed: the same import lands.
    let landed = project.json(&["import", &big]);
    assert_ne!(project.head(), head);
    assert_eq!(landed["commit_id"].as_str(), project.head().as_deref());
    assert_valid(&project);
}

// ---------------------------------------------------------------- 2. read-only

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_read_only_workspace_refuses_imports_with_a_typed_error_and_keeps_serving_reads() {
    let Some(mount) = Tmpfs::mount("16m") else {
        return;
    };
    let project = mount.project();
    let first = project.json(&["import", &small_trace()]);
    let head = project.head();
    let status_before = project.json(&["status"]);
    let alexnet = corpus().join("kineto/hta_alexnet_a100.pt.trace.json.gz");

    mount.remount("ro");
    let out = project.run(&["import", &alexnet.to_string_lossy(), "--json"]);
    let err = refused(&out, "CAPABILITY_UNAVAILABLE", 3);
    assert!(text(&err["message"]).contains("read-only"), "{err}");
    assert_eq!(err["details"]["capability"], "write_workspace", "{err}");
    assert_eq!(err["details"]["io_kind"], "ReadOnlyFilesystem", "{err}");
    assert!(text(&err["remediation"]).contains("read-write"), "{err}");
    // Nothing changed, and reads still work on the read-only workspace.
    assert_eq!(project.head(), head);
    assert_eq!(project.staging_entries(), 0);
    assert_eq!(project.json(&["status"]), status_before);
    assert_valid(&project);
    let hotspots = project.json(&[
        "analyze",
        "hotspots",
        first["run_id"].as_str().unwrap(),
        "--limit",
        "3",
    ]);
    assert!(hotspots["rows"].is_array(), "{hotspots}");

    mount.remount("rw");
    project.json(&["import", &alexnet.to_string_lossy()]);
    assert_ne!(project.head(), head);
    assert_valid(&project);
}

// ---------------------------------------------------------------- 3. permission denied

/// `program args…` run as `nobody` (uid/gid 65534), or `None` when this
/// environment cannot switch users.
fn as_nobody() -> Option<Command> {
    if !is_root() {
        eprintln!("SKIP: running a child as another user needs root");
        return None;
    }
    let works = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .arg("true")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    if works("setpriv", &setpriv) {
        let mut cmd = Command::new("setpriv");
        cmd.args(setpriv);
        return Some(cmd);
    }
    if works("runuser", &["-u", "nobody", "--"]) {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "nobody", "--"]);
        return Some(cmd);
    }
    eprintln!("SKIP: neither setpriv nor runuser can run a child as nobody here");
    None
}

fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read_dir").flatten() {
            chown_tree(&entry.path(), uid);
        }
    }
}

fn flameox_as_nobody(project: &Project, args: &[&str]) -> Option<Output> {
    let mut cmd = as_nobody()?;
    cmd.arg(flameox_bin())
        .args(args)
        .current_dir(project.path())
        .env("NO_COLOR", "1")
        .env_remove("FLAMEOX_TEST_PAUSE_AT");
    Some(cmd.output().expect("running flameox as nobody"))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn an_unreadable_input_is_an_invalid_argument_naming_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    project.json(&["import", &small_trace()]);
    let head = project.head();
    let secret = project.path().join("secret_trace.json");
    std::fs::copy(small_trace().replace("after_fix", "before_fix"), &secret).expect("copy");
    // The project (and the workspace) belong to nobody; the input too, but
    // with mode 000 even its owner may not read it.
    chown_tree(project.path(), 65534);
    std::fs::set_permissions(project.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let Some(out) = flameox_as_nobody(&project, &["import", "secret_trace.json", "--json"]) else {
        return;
    };
    let err = refused(&out, "INVALID_ARGUMENTS", 2);
    let message = err["message"].as_str().unwrap_or("");
    assert!(message.contains("secret_trace.json"), "{err}");
    assert!(message.contains("permission denied"), "{err}");
    assert_eq!(err["details"]["input"], "secret_trace.json", "{err}");
    assert_eq!(err["details"]["fields"][0]["field"], "path", "{err}");
    assert!(text(&err["remediation"]).contains("readable"), "{err}");
    assert_eq!(project.head(), head);
    assert_eq!(project.staging_entries(), 0);
    assert_eq!(project.json(&["status"])["runs"], 1, "no run recorded");
    assert_valid(&project);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_workspace_this_user_may_not_write_is_a_typed_error_not_an_internal_one() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    project.json(&["import", &small_trace()]);
    let head = project.head();
    // Root owns the workspace; nobody may read it (and the input) but not write.
    let input = project.path().join("trace.json");
    std::fs::copy(
        corpus().join("kineto/hta_amd_mi250_rocm6.2.json.gz"),
        &input,
    )
    .unwrap();
    std::fs::set_permissions(project.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o644)).unwrap();
    let Some(out) = flameox_as_nobody(&project, &["import", "trace.json", "--json"]) else {
        return;
    };
    let err = refused(&out, "CAPABILITY_UNAVAILABLE", 3);
    assert!(text(&err["message"]).contains("permission denied"), "{err}");
    assert_eq!(err["details"]["capability"], "workspace_access", "{err}");
    assert_eq!(project.head(), head);
    assert_eq!(project.staging_entries(), 0);
    assert_valid(&project);
}

// ---------------------------------------------------------------- 5. newer schema

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(path).expect("read manifest")).expect("json");
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec_pretty(&value).unwrap()).expect("write manifest");
}

fn this_version() -> String {
    let out = Command::new(flameox_bin())
        .arg("--version")
        .output()
        .expect("flameox --version");
    // `flameox 0.1.0 (commit …, … build)`: the second word.
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_workspace_written_by_a_newer_flameox_says_so_and_how_to_fix_it() {
    let project = Project::new();
    project.json(&["import", &small_trace()]);
    let head = project.head();
    let identity = project.path().join(".flameox/workspace.json");
    // A newer flameox bumped the schema and (as newer versions do) added a key.
    edit_json(&identity, |v| {
        v["schema_version"] = 7.into();
        v["flameox_version"] = "9.4.0".into();
        v["storage_backend"] = "local".into();
    });
    let before = std::fs::read(&identity).unwrap();
    let this = this_version();
    assert!(!this.is_empty());
    for args in [
        vec!["status"],
        vec!["import", &small_trace()],
        vec!["validate"],
    ] {
        let mut all = args.clone();
        all.push("--json");
        let err = refused(&project.run(&all), "WORKSPACE_INVALID", 5);
        let message = err["message"].as_str().unwrap_or("");
        assert!(message.contains("newer flameox"), "{args:?}: {err}");
        assert!(message.contains("9.4.0"), "{args:?}: {err}");
        assert!(message.contains("schema version 7"), "{args:?}: {err}");
        assert!(
            message.contains("supports schema version 1"),
            "{args:?}: {err}"
        );
        assert!(
            message.contains(&format!("flameox {this}")),
            "{args:?}: {err}"
        );
        assert!(
            text(&err["remediation"]).contains("upgrade flameox"),
            "{err}"
        );
        assert_eq!(err["details"]["written_by_flameox_version"], "9.4.0");
        assert_eq!(err["details"]["supported_schema_version"], 1);
    }
    assert_eq!(
        std::fs::read(&identity).unwrap(),
        before,
        "workspace.json untouched"
    );
    assert_eq!(project.head(), head);
    assert_eq!(project.staging_entries(), 0);
}

fn head_generation(project: &Project) -> PathBuf {
    let head = project.head().expect("HEAD");
    let commit: Value = serde_json::from_slice(
        &std::fs::read(
            project
                .path()
                .join(format!(".flameox/corpus/commits/{head}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let id = commit["generations"]
        .as_object()
        .and_then(|g| g.keys().next().cloned())
        .expect("a generation");
    project
        .path()
        .join(format!(".flameox/generations/{id}/manifest.json"))
}

fn validation_errors(project: &Project) -> Vec<(String, String)> {
    let out = project.run(&["validate", "--json"]);
    assert_eq!(out.status.code(), Some(5), "validation must fail");
    let report = first_json(&out);
    assert_eq!(report["ok"], false, "{report}");
    report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["code"].as_str().unwrap_or("").to_owned(),
                e["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn manifests_and_evidence_of_a_newer_schema_are_reported_as_such() {
    let project = Project::new();
    let imported = project.json(&["import", &small_trace()]);
    let manifest = head_generation(&project);

    // An evidence file of a newer evidence schema.
    edit_json(&manifest, |v| v["files"][0]["schema_version"] = 9.into());
    let errors = validation_errors(&project);
    assert!(
        errors
            .iter()
            .any(|(code, message)| code == "evidence_schema_newer"
                && message.contains("newer flameox")
                && message.contains("evidence schema version 9")
                && message.contains("upgrade flameox")),
        "{errors:?}"
    );

    // A generation manifest of a newer manifest schema.
    edit_json(&manifest, |v| {
        v["schema_version"] = 3.into();
        v["flameox_version"] = "9.4.0".into();
    });
    let errors = validation_errors(&project);
    assert!(
        errors
            .iter()
            .any(|(code, message)| code == "generation_unreadable"
                && message.contains("generation manifest")
                && message.contains("newer flameox (flameox 9.4.0, schema version 3)")
                && message.contains("supports schema version 1")),
        "{errors:?}"
    );
    // Reads that need it refuse with the same explanation.
    let out = project.run(&[
        "analyze",
        "hotspots",
        imported["run_id"].as_str().unwrap(),
        "--json",
    ]);
    let err = refused(&out, "WORKSPACE_INVALID", 5);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("newer flameox"),
        "{err}"
    );
}

// ---------------------------------------------------------------- 6. flameox.toml

const WORKLOAD: &str = r#"[workloads.pairs]
argv = ["python3", "-c", "print({n})"]
timeout_seconds = 5
parameters = { n = [1, 2, 3] }
"#;

const EXPERIMENT: &str = r#"
[experiments.grow]
workload = "pairs"
scaling = { parameter = "n", values = [1, 2, 3] }
repetitions = 3
seed = 7
primary_metric = "wall_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.95
"#;

/// The key paths `flameox workload list` reports for `text`, after checking
/// the refusal and that the file was left as written.
fn key_paths(project: &Project, text: &str, args: &[&str]) -> Vec<String> {
    let path = project.path().join("flameox.toml");
    std::fs::write(&path, text).unwrap();
    let mut all = args.to_vec();
    all.push("--json");
    // Seed, "Exit codes": "2: invalid arguments or configuration".
    let err = refused(&project.run(&all), "WORKSPACE_INVALID", 2);
    assert_eq!(err["details"]["file"], "flameox.toml");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "never rewritten"
    );
    err["details"]["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnostics: {err}"))
        .iter()
        .map(|d| d["key_path"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn each_flameox_toml_mistake_names_its_exact_key_path() {
    let project = Project::new();
    let valid = format!("{WORKLOAD}{EXPERIMENT}");
    std::fs::write(project.path().join("flameox.toml"), &valid).unwrap();
    project.json(&["workload", "list"]);

    // The reported bug: a key missing from [experiments.grow] was blamed
    // on the table above it (`workloads.pairs`).
    let missing = valid.replace("confidence_level = 0.95\n", "");
    for args in [
        &["workload", "list"][..],
        &["experiment", "plan", "grow"][..],
    ] {
        assert_eq!(
            key_paths(&project, &missing, args),
            ["experiments.grow.confidence_level"],
            "{args:?}"
        );
    }
    let cases = [
        (
            "a wrong type in a workload",
            valid.replace("timeout_seconds = 5", "timeout_seconds = \"five\""),
            "workloads.pairs.timeout_seconds",
        ),
        (
            "an unknown key in a nested table",
            format!("{WORKLOAD}[workloads.pairs.oracle]\nexit_code = [0]\n{EXPERIMENT}"),
            "workloads.pairs.oracle.exit_code",
        ),
        (
            "a key missing from an inline table",
            valid.replace(", values = [1, 2, 3] }", " }"),
            "experiments.grow.scaling.values",
        ),
        (
            "a wrong type in an array",
            valid.replace("\"print({n})\"]", "\"print({n})\", 3]"),
            "workloads.pairs.argv[3]",
        ),
        (
            "an unknown variant",
            valid.replace("\"lower_is_better\"", "\"sideways\""),
            "experiments.grow.polarity",
        ),
        (
            "a missing key in the first table",
            valid.replace("timeout_seconds = 5\n", ""),
            "workloads.pairs.timeout_seconds",
        ),
        (
            "an unknown key at the top",
            format!("[workload.pairs]\nargv = [\"x\"]\n{valid}"),
            "workload",
        ),
        (
            "a semantic rule (checked after parsing)",
            valid.replace("confidence_level = 0.95", "confidence_level = 1.5"),
            "experiments.grow.confidence_level",
        ),
    ];
    for (what, text, expected) in cases {
        assert_eq!(
            key_paths(&project, &text, &["workload", "list"]),
            [expected],
            "{what}:\n{text}"
        );
    }
}
