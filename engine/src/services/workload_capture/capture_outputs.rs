//! What a capture keeps besides its receipt: the adapter's profile (after
//! `perf script` + folding, or `nsys export`) and the workload's declared
//! outputs, each stored and extracted into the execution run. A run that
//! did not end by itself (timeout, cancellation) leaves an incomplete
//! profile: it is moved to `.flameox/quarantine/capture-<run>/`, never
//! imported, and declared outputs are left where they are, unread.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flameox_extractors::Limitation;
use inferno::collapse::Collapse;

use crate::error::{FlameoxError, Result, io_error};
use crate::execution::env::child_environment;
use crate::execution::{ProcessSpec, Unsupervised, run_process};
use crate::publish::StagedGeneration;
use crate::runs::{RunArtifact, RunManifest};
use crate::services::adapters::Wrapped;
use crate::services::capture::CapturePlan;
use crate::services::import::{ImportProgress, stage_file_for_run};
use crate::workspace::Workspace;

/// The adapter's profile after the run.
#[derive(Debug)]
pub enum Profile {
    /// The adapter writes none (`process`).
    None,
    Ready {
        path: PathBuf,
        kind: String,
    },
    Missing {
        reason: String,
    },
    /// The run was interrupted: these files may be partial.
    Incomplete {
        paths: Vec<PathBuf>,
    },
}

/// What was kept, staged and noted.
pub struct Kept {
    pub artifacts: Vec<RunArtifact>,
    pub staged: Vec<StagedGeneration>,
    pub limitations: Vec<Limitation>,
    pub quarantined: Vec<String>,
    pub capture: String,
    /// False when a required output is missing or unreadable.
    pub outputs_ok: bool,
}

fn limitation(code: &str, message: impl Into<String>) -> Limitation {
    Limitation {
        code: code.to_owned(),
        count: 1,
        message: message.into(),
    }
}

/// Bytes of `perf script` text kept for folding.
const PERF_SCRIPT_LIMIT: usize = 256 << 20;

/// Runs a post-processing tool with a bounded time and output.
fn run_tool(program: &Path, argv: Vec<String>, dir: &Path, limit: usize) -> Result<Vec<u8>> {
    let mut spec = ProcessSpec::new(
        program.to_path_buf(),
        argv,
        dir.to_path_buf(),
        Duration::from_secs(600),
    );
    spec.env = child_environment(&Default::default());
    spec.output_limit = limit;
    let outcome = run_process(&spec, &Unsupervised)?;
    if outcome.exit_code != Some(0) {
        return Err(FlameoxError::new(
            crate::error::ErrorCode::ProcessFailed,
            format!(
                "{} failed: {}",
                program.display(),
                String::from_utf8_lossy(
                    &outcome.stderr.bytes[..outcome.stderr.bytes.len().min(500)]
                )
            ),
        ));
    }
    if outcome.stdout.truncated {
        return Err(FlameoxError::new(
            crate::error::ErrorCode::ArtifactTooLarge,
            format!("{} wrote more than {limit} bytes", program.display()),
        ));
    }
    Ok(outcome.stdout.bytes)
}

/// `perf script` of `data`, folded by inferno into `perf.folded`.
fn fold_perf(program: &Path, data: &Path, dir: &Path) -> Result<PathBuf> {
    let script = run_tool(
        program,
        vec![
            "perf".into(),
            "script".into(),
            "--input".into(),
            data.to_string_lossy().into_owned(),
        ],
        dir,
        PERF_SCRIPT_LIMIT,
    )?;
    let folded = dir.join("perf.folded");
    let file = std::fs::File::create(&folded).map_err(|e| io_error("writing folded stacks", e))?;
    let mut folder = inferno::collapse::perf::Folder::default();
    folder
        .collapse(&script[..], std::io::BufWriter::new(file))
        .map_err(|e| io_error("folding perf script output", e))?;
    Ok(folded)
}

/// Turns the adapter's raw output into an importable profile.
pub fn post_process(
    adapter: &str,
    wrapped: &Wrapped,
    dir: &Path,
    complete: bool,
) -> Result<Profile> {
    let Some(output) = &wrapped.profile else {
        return Ok(Profile::None);
    };
    let raw = match adapter {
        "nsys" => dir.join(format!("{}.nsys-rep", output.file_name)),
        _ => dir.join(&output.file_name),
    };
    if !complete {
        let paths = [raw.clone()].into_iter().filter(|p| p.exists()).collect();
        return Ok(Profile::Incomplete { paths });
    }
    if !raw.is_file() || std::fs::metadata(&raw).map(|m| m.len()).unwrap_or(0) == 0 {
        return Ok(Profile::Missing {
            reason: format!("{adapter} wrote no {}", output.file_name),
        });
    }
    let ready = match adapter {
        "perf" => fold_perf(&wrapped.program, &raw, dir).map(|path| (path, "folded_stacks")),
        "nsys" => {
            let sqlite = dir.join("profile.sqlite");
            let argv = [
                "nsys",
                "export",
                "--type",
                "sqlite",
                "--force-overwrite",
                "true",
                "--output",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([
                sqlite.to_string_lossy().into_owned(),
                raw.to_string_lossy().into_owned(),
            ])
            .collect();
            run_tool(&wrapped.program, argv, dir, 1 << 20)
                .map(|_| (sqlite, "nsight_systems_sqlite"))
        }
        _ => Ok((raw, output.kind.as_str())),
    };
    Ok(match ready {
        Ok((path, kind)) => Profile::Ready {
            path,
            kind: kind.to_owned(),
        },
        Err(e) => Profile::Missing {
            reason: format!(
                "post-processing the {adapter} profile failed: {}",
                e.message
            ),
        },
    })
}

/// Moves possibly partial files out of staging into the quarantine.
fn quarantine(ws: &Workspace, run_id: &str, paths: &[PathBuf]) -> Result<Vec<String>> {
    let target = ws
        .dir()
        .join("quarantine")
        .join(format!("capture-{run_id}"));
    std::fs::create_dir_all(&target).map_err(|e| io_error("creating a quarantine folder", e))?;
    let mut names = Vec::new();
    for path in paths {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        std::fs::rename(path, target.join(&name))
            .map_err(|e| io_error("quarantining a partial profile", e))?;
        names.push(name);
    }
    Ok(names)
}

/// Keeps the profile and declared outputs of a finished run.
pub fn keep_outputs(
    ws: &Workspace,
    run: &RunManifest,
    plan: &CapturePlan,
    _dir: &Path,
    profile: Profile,
    complete: bool,
    progress: &dyn ImportProgress,
) -> Result<Kept> {
    let mut kept = Kept {
        artifacts: Vec::new(),
        staged: Vec::new(),
        limitations: Vec::new(),
        quarantined: Vec::new(),
        capture: if complete { "completed" } else { "interrupted" }.to_owned(),
        outputs_ok: true,
    };
    match profile {
        Profile::None => {}
        Profile::Ready { path, kind } => {
            // A third-party adapter may leave its format to detection.
            let forced = (kind != "auto").then_some(kind.as_str());
            match stage_file_for_run(ws, &run.run_id, &path, forced, "profile", progress) {
                Ok(s) => {
                    kept.artifacts.push(s.artifact);
                    kept.staged.push(s.staged);
                }
                Err(e) => {
                    kept.capture = "failed".into();
                    kept.limitations
                        .push(limitation("PROFILE_EXTRACTION_FAILED", e.message.clone()));
                }
            }
        }
        Profile::Missing { reason } => {
            kept.capture = "failed".into();
            kept.limitations.push(limitation("PROFILE_MISSING", reason));
        }
        Profile::Incomplete { paths } => {
            kept.quarantined = quarantine(ws, &run.run_id, &paths)?;
            if !kept.quarantined.is_empty() {
                kept.capture = "partial".into();
                kept.limitations.push(limitation(
                    "PROFILE_QUARANTINED",
                    "the run was interrupted; its possibly partial profile was quarantined, not imported",
                ));
            }
        }
    }
    if !complete {
        if !plan.outputs.is_empty() {
            kept.outputs_ok = false;
            kept.limitations.push(limitation(
                "OUTPUTS_SKIPPED",
                "the run was interrupted; declared outputs were left in place, not imported",
            ));
        }
        return Ok(kept);
    }
    let root = ws
        .project_root()
        .canonicalize()
        .map_err(|e| io_error("resolving the project root", e))?;
    for output in &plan.outputs {
        let path = root.join(&output.path);
        let inside = path.canonicalize().map(|p| p.starts_with(&root));
        let problem = match inside {
            Err(_) => Some((
                "OUTPUT_MISSING",
                format!("output {} was not written at {}", output.name, output.path),
            )),
            Ok(false) => Some((
                "OUTPUT_OUTSIDE_PROJECT",
                format!("output {} resolves outside the project", output.name),
            )),
            Ok(true) => {
                let kind = (output.kind != "auto").then_some(output.kind.as_str());
                match stage_file_for_run(
                    ws,
                    &run.run_id,
                    &path,
                    kind,
                    &format!("output:{}", output.name),
                    progress,
                ) {
                    Ok(s) => {
                        kept.artifacts.push(s.artifact);
                        kept.staged.push(s.staged);
                        None
                    }
                    Err(e) => Some((
                        "OUTPUT_EXTRACTION_FAILED",
                        format!("output {}: {}", output.name, e.message),
                    )),
                }
            }
        };
        if let Some((code, message)) = problem {
            if output.required {
                kept.outputs_ok = false;
            }
            kept.limitations.push(limitation(code, message));
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_profiles_move_to_the_run_quarantine_folder() {
        let project = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(project.path()).unwrap();
        let partial = project.path().join("profile.speedscope.json");
        std::fs::write(&partial, b"{\"truncated").unwrap();
        let names = quarantine(&ws, "run-1", std::slice::from_ref(&partial)).unwrap();
        assert_eq!(names, ["profile.speedscope.json"]);
        assert!(!partial.exists());
        let kept = ws
            .dir()
            .join("quarantine/capture-run-1/profile.speedscope.json");
        assert_eq!(std::fs::read(kept).unwrap(), b"{\"truncated");
    }
}
