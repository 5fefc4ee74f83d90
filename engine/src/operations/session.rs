//! What an operation that needs more than an open workspace gets from its
//! transport: the project root (there may be no workspace yet), a way to
//! open the workspace, progress and cancellation for long work, the
//! capture plans held between calls, and whether paths must stay inside
//! the project (an agent's call) or may be anywhere (a person's command).

use std::path::Path;
use std::sync::Arc;

use crate::Workspace;
use crate::error::Result;
use crate::query::SessionCache;
use crate::services::import::{ImportProgress, Quiet};
use crate::services::plans::PlanStore;
use crate::services::{CallOptions, QueryContext};

/// Where each import phase starts on the 0..100 scale; extraction fills the
/// span up to `publishing` in proportion to the bytes read.
pub const IMPORT_PHASES: [(&str, f64); 4] = [
    ("validating_artifact", 1.0),
    ("extracting", 5.0),
    ("publishing", 92.0),
    ("completed", 100.0),
];

/// The same for an import from a URL: fetching the bytes comes first.
pub const REMOTE_IMPORT_PHASES: [(&str, f64); 5] = [
    ("validating_artifact", 1.0),
    ("downloading", 2.0),
    ("extracting", 40.0),
    ("publishing", 92.0),
    ("completed", 100.0),
];

/// Where each capture phase starts; capturing has no known duration, so
/// it reports the phase only (no invented percentage).
pub const CAPTURE_PHASES: [(&str, f64); 6] = [
    ("planning", 1.0),
    ("capturing", 5.0),
    ("validating_artifact", 60.0),
    ("extracting", 70.0),
    ("publishing", 92.0),
    ("completed", 100.0),
];

/// Where each experiment phase starts. Trials (warmups included) fill
/// `capturing` up to `publishing` one equal step per finished trial.
pub const EXPERIMENT_PHASES: [(&str, f64); 6] = [
    ("planning", 1.0),
    ("warming_up", 3.0),
    ("capturing", 5.0),
    ("publishing", 90.0),
    ("analyzing", 95.0),
    ("completed", 100.0),
];

/// A reporter shared with the blocking thread that does the work.
pub type Reporter = Arc<dyn ImportProgress + Send + Sync>;

/// Makes one progress reporter per long call: a terminal's progress bar and
/// Ctrl-C, or an MCP client's progress notifications and cancellation.
pub trait ProgressSource: Send + Sync {
    /// A reporter whose phases start at these points of 0..100.
    fn reporter(&self, phases: &'static [(&'static str, f64)]) -> Reporter;
}

/// Reports nothing, never cancels.
pub struct NoProgress;

impl ProgressSource for NoProgress {
    fn reporter(&self, _phases: &'static [(&'static str, f64)]) -> Reporter {
        Arc::new(Quiet)
    }
}

/// Opens the workspace the call reads (absent before `initialize_workspace`).
pub type OpenWorkspace<'a> = &'a (dyn Fn() -> Result<Workspace> + Send + Sync);

/// One call's surroundings.
pub struct Session<'a> {
    /// The project the call belongs to: where `initialize_workspace`
    /// creates `.flameox/`, and what confined import paths resolve inside.
    pub project_root: &'a Path,
    pub open_workspace: OpenWorkspace<'a>,
    pub cache: Option<&'a SessionCache>,
    pub options: CallOptions,
    pub progress: &'a dyn ProgressSource,
    /// Capture plans held between calls.
    pub plans: &'a PlanStore,
    /// Import paths must resolve inside the project root (or the temp
    /// folder): an agent's call. A person's command line reads any path.
    pub confine_paths: bool,
    /// Default answers keep to the byte budget (`budget.rs`): the answer
    /// is read by a program (an agent, `--json`). A person's table shows
    /// the default page and cuts long names itself.
    pub budgeted: bool,
}

impl Session<'_> {
    /// The workspace, opened.
    pub fn workspace(&self) -> Result<Workspace> {
        (self.open_workspace)()
    }

    /// A query context over an opened workspace.
    pub fn query<'w>(&self, ws: &'w Workspace) -> QueryContext<'w>
    where
        Self: 'w,
    {
        QueryContext {
            ws,
            cache: self.cache,
            options: self.options.clone(),
        }
    }
}
