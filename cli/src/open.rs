//! `flameox open <artifact> [--launch]`: the terminal's view of the viewer
//! plan (`get_native_viewer_plan`), and with `--launch` a one-shot local
//! server plus the viewer's deep link (engine: `services::viewer`), which
//! only a terminal offers.

use std::process::{Command, Stdio};
use std::time::Duration;

use flameox_engine::FlameoxError;
use flameox_engine::error::Result;
use flameox_engine::services::capabilities::ViewerPlan;
use flameox_engine::services::viewer;

use crate::args::GlobalOptions;
use crate::terminal::{emit, open};

/// The viewer plan as a person reads it.
pub(crate) fn plan_view(p: &ViewerPlan) -> String {
    let mut out = format!("{} ({}) opens in {}:\n", p.artifact_id, p.kind, p.viewer);
    for step in &p.steps {
        out += &format!("  - {step}\n");
    }
    out
}

/// `--launch`: serves the artifact's bytes once and opens the viewer. Never
/// with `--json` (seed: "It never launches a browser when --json is
/// active"): a program reads the plan, and nothing starts.
pub(crate) fn launch(g: &GlobalOptions, artifact: &str, wait: u64) -> Result<()> {
    if g.json {
        return Err(FlameoxError::invalid_argument(
            "launch",
            "opens a browser, which a --json call never does: read the viewer plan instead, or run `flameox open --launch` without --json",
        )
        .recover_with(
            "get_native_viewer_plan",
            serde_json::json!({ "target": artifact }),
            format!("flameox open {artifact} --json"),
        ));
    }
    let ws = open(g)?;
    let launch = viewer::prepare_launch(&ws, artifact)?;
    let listener = launch.bind()?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let url = launch.url(port);
    eprintln!(
        "serving {} on 127.0.0.1:{port} for {wait} s; open:\n  {url}",
        launch.path
    );
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let launched = Command::new(opener)
        .arg(&url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .is_ok();
    if !launched {
        eprintln!("({opener} is not available: open the link in a browser)");
    }
    let sent = viewer::serve(&listener, &launch, Duration::from_secs(wait))?;
    let result = serde_json::json!({ "viewer": launch.viewer, "url": url, "bytes_served": sent });
    emit(g, &result, |_| {
        if sent > 0 {
            format!("{} fetched {sent} bytes\n", launch.viewer)
        } else {
            format!("nobody fetched the trace within {wait} s\n")
        }
    })
}
