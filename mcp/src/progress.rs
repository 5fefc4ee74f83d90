//! MCP progress for long tools. The engine reports phases and bytes from a
//! blocking thread; this module turns them into one strictly increasing
//! progress stream (0..100) and forwards it to the client while the work
//! runs, and exposes the request's cancellation token to the engine.

use std::sync::Mutex;

use std::sync::Arc;

use flameox_engine::operations::session::{ProgressSource, Reporter};
use flameox_engine::services::import::ImportProgress;
use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The smallest step worth a notification while bytes stream in.
const MIN_STEP: f64 = 1.0;

/// Progress reporter handed to the engine (it runs on a blocking thread).
pub struct McpProgress {
    sender: Option<mpsc::UnboundedSender<(f64, String)>>,
    cancel: Option<CancellationToken>,
    state: Mutex<Stream>,
    phases: &'static [(&'static str, f64)],
}

#[derive(Default)]
struct Stream {
    phase: String,
    last_sent: f64,
}

/// The task that forwards notifications to the client; await it after the
/// work so every notification precedes the result.
pub struct Forwarder(Option<JoinHandle<()>>);

impl Forwarder {
    pub async fn finish(self) {
        if let Some(handle) = self.0 {
            let _ = handle.await;
        }
    }
}

impl McpProgress {
    /// A reporter whose phases start at the given points of 0..100.
    /// Without a progress token nothing is sent; cancellation still works.
    pub fn start_with(
        ctx: Option<&RequestContext<RoleServer>>,
        phases: &'static [(&'static str, f64)],
    ) -> (McpProgress, Forwarder) {
        let cancel = ctx.map(|c| c.ct.clone());
        let token = ctx.and_then(|c| c.meta.get_progress_token());
        let (Some(ctx), Some(token)) = (ctx, token) else {
            let quiet = McpProgress {
                sender: None,
                cancel,
                state: Mutex::default(),
                phases,
            };
            return (quiet, Forwarder(None));
        };
        let (sender, mut receiver) = mpsc::unbounded_channel::<(f64, String)>();
        let peer = ctx.peer.clone();
        let handle = tokio::spawn(async move {
            while let Some((value, message)) = receiver.recv().await {
                let param = ProgressNotificationParam::new(token.clone(), value)
                    .with_total(100.0)
                    .with_message(message);
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        let reporter = McpProgress {
            sender: Some(sender),
            cancel,
            state: Mutex::default(),
            phases,
        };
        (reporter, Forwarder(Some(handle)))
    }

    /// Sends `value` with a message if it moves the stream forward enough.
    fn advance(&self, value: f64, phase: Option<&str>) {
        self.advance_with(value, phase, None);
    }

    /// The start of a named phase on the 0..100 scale.
    fn start_of(&self, name: &str) -> Option<f64> {
        self.phases.iter().find(|(n, _)| *n == name).map(|p| p.1)
    }

    /// The span bytes fill: `downloading`'s while the import downloads,
    /// else `extracting`'s (up to the phase after it).
    fn span_of_current_phase(&self) -> (Option<f64>, Option<f64>) {
        let current = self
            .state
            .lock()
            .map(|s| s.phase.clone())
            .unwrap_or_default();
        let filling = match current.as_str() {
            "downloading" => "downloading",
            _ => "extracting",
        };
        let index = self.phases.iter().position(|(n, _)| *n == filling);
        match index {
            Some(i) => (
                self.phases.get(i).map(|p| p.1),
                self.phases.get(i + 1).map(|p| p.1),
            ),
            None => (None, None),
        }
    }

    /// [`Self::advance`] with a detail appended to the phase message.
    fn advance_with(&self, value: f64, phase: Option<&str>, detail: Option<String>) {
        let Some(sender) = &self.sender else { return };
        let Ok(mut stream) = self.state.lock() else {
            return;
        };
        if let Some(phase) = phase {
            stream.phase = phase.to_owned();
        }
        let required = if phase.is_some() { 0.0 } else { MIN_STEP };
        if value <= stream.last_sent || value < stream.last_sent + required {
            return;
        }
        stream.last_sent = value;
        let message = match detail {
            Some(detail) => format!("{}: {detail}", stream.phase),
            None => stream.phase.clone(),
        };
        let _ = sender.send((value, message));
    }
}

impl ImportProgress for McpProgress {
    fn phase(&self, phase: &str) {
        if let Some((_, start)) = self.phases.iter().find(|(name, _)| *name == phase) {
            self.advance(*start, Some(phase));
        }
    }

    fn bytes(&self, done: u64, total: u64) {
        if total == 0 {
            return;
        }
        let fraction = (done as f64 / total as f64).clamp(0.0, 1.0);
        // Bytes of the phase under way (`downloading` or `extracting`) fill
        // the span up to the phase after it.
        let (Some(from), Some(to)) = self.span_of_current_phase() else {
            return;
        };
        // Stay strictly below the next phase so `publishing` still advances.
        let value = (from + fraction * (to - from - MIN_STEP)).floor();
        self.advance(value, None);
    }

    fn steps(&self, done: u64, total: u64) {
        let (Some(from), Some(to)) = (self.start_of("capturing"), self.start_of("publishing"))
        else {
            return;
        };
        if total == 0 {
            return;
        }
        let fraction = (done as f64 / total as f64).clamp(0.0, 1.0);
        // Below `publishing` so that phase still advances.
        let value = from + fraction * (to - from - MIN_STEP);
        self.advance_with(value, None, Some(format!("trial {done} of {total}")));
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    }
}

/// One call's progress: each reporter the operation asks for forwards to
/// the client; [`McpProgressSource::finish`] waits until every
/// notification went out, so all of them precede the result.
pub struct McpProgressSource {
    ctx: Option<RequestContext<RoleServer>>,
    forwarders: Mutex<Vec<Forwarder>>,
}

impl McpProgressSource {
    pub fn new(ctx: Option<&RequestContext<RoleServer>>) -> McpProgressSource {
        McpProgressSource {
            ctx: ctx.cloned(),
            forwarders: Mutex::default(),
        }
    }

    pub async fn finish(self) {
        let forwarders = self.forwarders.into_inner().unwrap_or_default();
        for forwarder in forwarders {
            forwarder.finish().await;
        }
    }
}

impl ProgressSource for McpProgressSource {
    fn reporter(&self, phases: &'static [(&'static str, f64)]) -> Reporter {
        let (reporter, forwarder) = McpProgress::start_with(self.ctx.as_ref(), phases);
        if let Ok(mut held) = self.forwarders.lock() {
            held.push(forwarder);
        }
        Arc::new(reporter)
    }
}
