//! What every command shares with the terminal: finding the workspace,
//! printing an answer or `--json`, a negative answer's exit code, the async
//! runtime of one command, the call's deadline, and progress bars with
//! Ctrl-C.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use flameox_engine::error::Result;
use flameox_engine::operations::session::{ProgressSource, Reporter};
use flameox_engine::services::CallOptions;
use flameox_engine::services::import::ImportProgress;
use flameox_engine::{FlameoxError, Workspace, WorkspaceLocator};
use serde::Serialize;

use crate::args::GlobalOptions;

pub(crate) fn locator(g: &GlobalOptions) -> WorkspaceLocator {
    WorkspaceLocator {
        workspace: g.workspace.clone(),
        project_root: g.project_root.clone(),
        cluster: g.cluster.clone(),
    }
}

pub(crate) fn open(g: &GlobalOptions) -> Result<Workspace> {
    Workspace::locate(&locator(g))
}

pub(crate) fn emit<T: Serialize>(
    g: &GlobalOptions,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<()> {
    let out = if g.json {
        serde_json::to_string_pretty(value).map_err(|e| FlameoxError::internal(e.to_string()))?
            + "\n"
    } else if g.quiet {
        String::new()
    } else {
        text(value)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    Ok(())
}

/// The exit code of an answer that was printed but is negative (a capture
/// whose validation failed, an invalid workspace). The answer stays the
/// only document on stdout — `--json` readers parse one object — and the
/// terminal gets one line on stderr saying why the exit code is not 0.
static VERDICT: OnceLock<u8> = OnceLock::new();

/// Records a negative answer's exit code (the first one wins).
pub(crate) fn verdict(g: &GlobalOptions, code: i32, why: &str) {
    if !g.json && !g.quiet {
        eprintln!("{why} (exit {code})");
    }
    let _ = VERDICT.set(u8::try_from(code).unwrap_or(1));
}

/// The process's exit code after a command that returned normally.
pub(crate) fn exit_after_answer() -> std::process::ExitCode {
    VERDICT
        .get()
        .map_or(std::process::ExitCode::SUCCESS, |&code| {
            std::process::ExitCode::from(code)
        })
}

pub(crate) fn block_on<F: std::future::Future>(fut: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FlameoxError::internal(format!("starting the runtime: {e}")))?;
    let output = runtime.block_on(fut);
    // Work still on a blocking thread (an import past its deadline that
    // missed its polls) ends with the process, not before the answer.
    runtime.shutdown_background();
    Ok(output)
}

pub(crate) fn call_options(g: &GlobalOptions) -> Result<CallOptions> {
    let timeout = match g.timeout {
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(_) => {
            return Err(FlameoxError::invalid_argument(
                "timeout",
                "must be a positive number of seconds",
            ));
        }
        None => None,
    };
    Ok(CallOptions {
        timeout,
        commit: None,
    })
}

/// The terminal's progress: one bar per long call on a TTY (nothing on a
/// pipe or with --json/--quiet); Ctrl-C cancels.
pub(crate) struct CliProgressSource {
    show: bool,
    bars: std::sync::Mutex<Vec<Arc<CliProgress>>>,
}

impl CliProgressSource {
    pub(crate) fn new(g: &GlobalOptions) -> CliProgressSource {
        CliProgressSource {
            show: !g.json && !g.quiet && std::io::stderr().is_terminal(),
            bars: std::sync::Mutex::default(),
        }
    }

    /// Clears the bars before the answer is printed.
    pub(crate) fn finish(&self) {
        if let Ok(bars) = self.bars.lock() {
            bars.iter().for_each(|b| b.finish());
        }
    }
}

impl ProgressSource for CliProgressSource {
    fn reporter(&self, _phases: &'static [(&'static str, f64)]) -> Reporter {
        let bar = Arc::new(CliProgress::new(self.show));
        if let Ok(mut bars) = self.bars.lock() {
            bars.push(bar.clone());
        }
        bar
    }
}

/// Progress bar on a TTY, nothing on a pipe; Ctrl-C cancels.
pub(crate) struct CliProgress {
    bar: Option<indicatif::ProgressBar>,
    cancelled: Arc<AtomicBool>,
}

impl CliProgress {
    pub(crate) fn new(show: bool) -> CliProgress {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
        let bar = show.then(|| {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:>20} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec})",
            ) {
                bar.set_style(style);
            }
            bar
        });
        CliProgress { bar, cancelled }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl ImportProgress for CliProgress {
    fn phase(&self, phase: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(phase.to_owned());
        }
    }
    fn bytes(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    }
    fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}
