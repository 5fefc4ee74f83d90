//! The rules an import of damaged bytes must keep: it ends within the
//! limit, by exiting (no signal, no panic), with 0 or a refusal of the
//! artifact (or the seed's own refusal), one JSON document on stdout,
//! HEAD where it was when it failed, and no staging left behind.

use std::path::Path;

use super::child::ChildOutcome;

/// The exit codes an import of damaged bytes may end with: 0 (imported,
/// perhaps with limitations) and 5 (the artifact is refused).
const IMPORT_EXITS: [i32; 2] = [0, 5];
/// The error codes an exit 5 of an import may carry.
const INPUT_ERRORS: [&str; 3] = [
    "ARTIFACT_PARSE_FAILED",
    "ARTIFACT_TOO_LARGE",
    "ARTIFACT_INTEGRITY_FAILED",
];

/// How the undamaged seed's import ends, when it is refused with a code
/// other than 5 (an nsys report needs `nsys export`: exit 3; one criterion
/// file needs its folder: exit 2). A mutant may end the same way.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedRefusal {
    pub exit: i32,
    pub code: String,
}

pub fn error_code(out: &ChildOutcome) -> String {
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A damaged input that now reads as a format flameox recognizes and
/// refuses by design: a SQLite database without Nsight tables (a flipped
/// table name), an nsys report (exit 3, `CAPABILITY_UNAVAILABLE`).
fn recognized_elsewhere(code: i32, out: &ChildOutcome) -> bool {
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    code == 3
        && body["code"] == "CAPABILITY_UNAVAILABLE"
        && matches!(
            body["details"]["kind"].as_str(),
            Some("sqlite" | "nsys_rep")
        )
}

/// Judges how one import ended.
pub fn judge(
    out: &ChildOutcome,
    head_before: &Option<String>,
    project: &Path,
    seed_refusal: impl FnOnce() -> Option<SeedRefusal>,
) -> (String, Option<String>) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let outcome = match (out.code, out.signal) {
        _ if out.timed_out => "hang".to_owned(),
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("signal {sig}"),
        (None, None) => "unknown".to_owned(),
    };
    if out.timed_out {
        return (
            outcome,
            Some(format!(
                "no end within the limit ({:.1} s CPU, {:.1} s wall)",
                out.cpu.as_secs_f64(),
                out.elapsed.as_secs_f64()
            )),
        );
    }
    if let Some(sig) = out.signal {
        return (
            outcome,
            Some(format!("killed by signal {sig}: {}", tail(&stderr))),
        );
    }
    if stderr.contains("panicked at") {
        return (outcome, Some(format!("panic: {}", tail(&stderr))));
    }
    let code = out.code.unwrap_or(-1);
    let refused_like_seed =
        || seed_refusal().is_some_and(|r| r.exit == code && r.code == error_code(out));
    if !IMPORT_EXITS.contains(&code) && !refused_like_seed() && !recognized_elsewhere(code, out) {
        return (
            outcome,
            Some(format!(
                "undocumented exit {code} for an import: {}",
                tail(&String::from_utf8_lossy(&out.stdout))
            )),
        );
    }
    let body: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => {
            return (
                outcome,
                Some(format!("stdout is not one JSON document ({e})")),
            );
        }
    };
    if code != 0 && head(project) != *head_before {
        return (
            outcome,
            Some("HEAD moved although the import failed".into()),
        );
    }
    if code == 5 {
        let error = body["code"].as_str().unwrap_or("");
        if !INPUT_ERRORS.contains(&error) {
            return (outcome, Some(format!("exit 5 with error code {error:?}")));
        }
    } else if code == 0 && body["run_id"].as_str().is_none() {
        return (outcome, Some("exit 0 without a run_id".into()));
    }
    let staging = std::fs::read_dir(project.join(".flameox/staging")).map_or(0, |d| d.count());
    if staging > 0 {
        return (
            outcome,
            Some(format!("{staging} staging entries left behind")),
        );
    }
    (outcome, None)
}

pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(6).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

pub fn head(project: &Path) -> Option<String> {
    std::fs::read_to_string(project.join(".flameox/corpus/HEAD"))
        .ok()
        .map(|s| s.trim().to_owned())
}
