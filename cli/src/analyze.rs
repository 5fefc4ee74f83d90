//! The files a terminal writes beside a catalogued answer (`--folded`,
//! `--flamegraph`): pictures and stack files for a person, from the same
//! target and metric the answer used.

use std::path::Path;

use flameox_engine::FlameoxError;
use flameox_engine::error::Result;
use flameox_engine::services::QueryContext;
use flameox_engine::services::analyze;
use flameox_engine::services::views::{self, FlameGraphRequest};

use crate::terminal::block_on;

/// Writes the files a terminal asked for beside an answer (`--folded`,
/// `--flamegraph`), from the same target and metric the answer used.
pub(crate) fn write_terminal_files(
    qc: &QueryContext<'_>,
    operation: &str,
    arguments: &serde_json::Value,
    result: &serde_json::Value,
    files: &[(&str, std::path::PathBuf)],
) -> Result<()> {
    let target = arguments["target"].as_str().unwrap_or_default();
    let metric = result["metric"].as_str();
    let base = match operation {
        "compare_hotspots" => arguments["base"].as_str().map(str::to_owned),
        _ => None,
    };
    for (flag, path) in files {
        match *flag {
            "flamegraphs" => write_report_flamegraphs(qc, result, path)?,
            "flamegraph" => write_flamegraph(qc, target, metric, base.as_ref(), path)?,
            "folded" => {
                let lines = block_on(analyze::folded_stacks(qc, target, metric))??;
                let text: String = lines
                    .iter()
                    .map(|(stack, w)| format!("{stack} {w}\n"))
                    .collect();
                write_file(flag, path, text.as_bytes())?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// One flame graph per reported finding that names a run or artifact,
/// `DIR/<finding-id>.svg`; a scope without stacks is skipped with a note.
fn write_report_flamegraphs(
    qc: &QueryContext<'_>,
    result: &serde_json::Value,
    dir: &Path,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        FlameoxError::invalid_argument(
            "flamegraphs",
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    for finding in result["findings"].as_array().into_iter().flatten() {
        let (Some(id), Some(scope)) = (finding["finding_id"].as_str(), finding["scope"].as_str())
        else {
            continue;
        };
        let path = dir.join(format!("{id}.svg"));
        if let Err(e) = write_flamegraph(qc, scope, None, None, &path) {
            eprintln!("no flame graph for {id} ({scope}): {}", e.message);
        }
    }
    Ok(())
}

/// Renders the flame graph (differential with `base`) into `path`.
fn write_flamegraph(
    qc: &QueryContext<'_>,
    target: &str,
    metric: Option<&str>,
    base: Option<&String>,
    path: &Path,
) -> Result<()> {
    let request = FlameGraphRequest {
        target: target.to_owned(),
        metric: metric.map(str::to_owned),
        diff_against: base.cloned(),
    };
    let graph = block_on(views::flame_graph(qc, &request))??;
    write_file("flamegraph", path, graph.svg.as_bytes())?;
    eprintln!(
        "flame graph{}: {} ({} stacks, {})",
        if graph.differential {
            " (differential)"
        } else {
            ""
        },
        path.display(),
        graph.stacks,
        graph.metric
    );
    Ok(())
}

fn write_file(flag: &str, path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| {
        FlameoxError::invalid_argument(flag, format!("cannot write {}: {e}", path.display()))
    })
}
