//! An MCP client session over the real `flameox mcp serve` child process.
//! The child's stdout is teed through a recorder on its way to the rmcp
//! client, so a test can prove that stdout carried nothing but protocol
//! messages; stderr is drained so the server never blocks on it.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

/// Records the progress notifications the server sends.
#[derive(Clone, Default)]
pub struct Recorder {
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().expect("progress lock").push(params);
    }
}

pub struct Session {
    pub client: RunningService<RoleClient, Recorder>,
    pub recorder: Recorder,
    pub stdout: Arc<Mutex<Vec<u8>>>,
    pub stderr: Arc<Mutex<Vec<u8>>>,
    /// The JSON of every tool result and resource this session received.
    pub transcript: Vec<String>,
    child: Child,
}

impl Session {
    /// Starts `flameox mcp serve --project-root <project>` plus `extra` args.
    pub async fn start(project: &Path, extra: &[&str]) -> Session {
        Session::start_with_env(project, extra, &[]).await
    }

    /// [`Self::start`] with environment variables set for the server.
    pub async fn start_with_env(project: &Path, extra: &[&str], env: &[(&str, String)]) -> Session {
        let mut child = Command::new(flameox_tests::flameox_bin())
            .args(["mcp", "serve", "--project-root"])
            .arg(project)
            .args(["--log-level", "debug"])
            .args(extra)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning flameox mcp serve");
        let child_stdout = child.stdout.take().expect("stdout");
        let child_stdin = child.stdin.take().expect("stdin");
        let child_stderr = child.stderr.take().expect("stderr");

        let stdout = Arc::new(Mutex::new(Vec::new()));
        let (client_end, tee_end) = tokio::io::duplex(1 << 16);
        tokio::spawn(pump(child_stdout, stdout.clone(), Some(tee_end)));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(pump(
            child_stderr,
            stderr.clone(),
            None::<tokio::io::DuplexStream>,
        ));

        let (reader, _unused_writer) = tokio::io::split(client_end);
        let recorder = Recorder::default();
        let client = recorder
            .clone()
            .serve((reader, child_stdin))
            .await
            .expect("MCP initialize over stdio");
        Session {
            client,
            recorder,
            stdout,
            stderr,
            transcript: Vec::new(),
            child,
        }
    }

    /// Calls a tool; a protocol error panics (tests of unknown tools use
    /// `self.client` directly).
    pub async fn call(&mut self, name: &str, args: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let result = self
            .client
            .call_tool(params)
            .await
            .unwrap_or_else(|e| panic!("{name}: protocol error {e}"));
        self.transcript
            .push(serde_json::to_string(&result).expect("result json"));
        result
    }

    /// Sends a tool call that the test can cancel.
    pub async fn send_cancellable(
        &self,
        name: &str,
        args: Value,
    ) -> rmcp::service::RequestHandle<RoleClient> {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        self.client
            .send_cancellable_request(
                rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                    params,
                )),
                rmcp::service::PeerRequestOptions::no_options(),
            )
            .await
            .expect("send a cancellable call")
    }

    /// Calls a tool that must succeed; returns `structuredContent.result`.
    pub async fn ok(&mut self, name: &str, args: Value) -> Value {
        let result = self.call(name, args).await;
        let body = structured(&result);
        assert_eq!(result.is_error, Some(false), "{name} failed: {body}");
        assert_eq!(body["ok"], true);
        body["result"].clone()
    }

    /// Calls a tool that must fail with `code`; returns the error object.
    pub async fn err(&mut self, name: &str, args: Value, code: &str) -> Value {
        let result = self.call(name, args).await;
        let body = structured(&result);
        assert_eq!(result.is_error, Some(true), "{name} should fail: {body}");
        assert_eq!(body["ok"], false);
        assert_eq!(body["error"]["code"], code, "{name}: {body}");
        body["error"].clone()
    }

    /// The progress notifications on the wire so far, in the order the
    /// server wrote them: `(progress, message)`. Unlike the client handler
    /// (which rmcp runs on its own task and may lag the response), a line
    /// is recorded here before the client can read anything after it.
    pub fn wire_progress(&self) -> Vec<(f64, Option<String>)> {
        let stdout = self.stdout.lock().expect("stdout").clone();
        String::from_utf8_lossy(&stdout)
            .split('\n')
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| {
                let params = &m["params"];
                let value = params["progress"].as_f64().unwrap_or(f64::NAN);
                (value, params["message"].as_str().map(str::to_owned))
            })
            .collect()
    }

    /// The phase names of the progress on the wire, in order, after
    /// checking that the values strictly increase.
    pub fn increasing_progress_phases(&self) -> Vec<String> {
        let progress = self.wire_progress();
        let values: Vec<f64> = progress.iter().map(|p| p.0).collect();
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "progress must increase: {values:?}"
        );
        progress.into_iter().filter_map(|p| p.1).collect()
    }

    /// The server's process id (None once it was reaped).
    #[allow(dead_code)]
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// SIGKILLs the server process (a crash: no cleanup runs), reaps it and
    /// returns its stdout and stderr so far.
    #[allow(dead_code)]
    pub async fn kill(mut self) -> (Vec<u8>, String) {
        self.child.kill().await.expect("SIGKILL the server");
        let _ = self.client.cancel().await;
        let stderr = String::from_utf8_lossy(&self.stderr.lock().expect("stderr")).into_owned();
        let stdout = self.stdout.lock().expect("stdout").clone();
        (stdout, stderr)
    }

    /// Closes the client and waits for the server to exit; returns stdout.
    pub async fn close(mut self) -> (Vec<u8>, String, Vec<String>) {
        let _ = self.client.cancel().await;
        let status = tokio::time::timeout(std::time::Duration::from_secs(20), self.child.wait())
            .await
            .expect("server exits after the client closes")
            .expect("wait for server");
        let stderr = String::from_utf8_lossy(&self.stderr.lock().expect("stderr")).into_owned();
        assert!(status.success(), "server exit {status}; stderr: {stderr}");
        let stdout = self.stdout.lock().expect("stdout").clone();
        (stdout, stderr, self.transcript)
    }
}

/// Copies `from` into `record` (and on to `forward`) until end of stream.
async fn pump<R, W>(mut from: R, record: Arc<Mutex<Vec<u8>>>, mut forward: Option<W>)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 1 << 14];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        record
            .lock()
            .expect("recorder lock")
            .extend_from_slice(&buf[..n]);
        if let Some(to) = forward.as_mut()
            && to.write_all(&buf[..n]).await.is_err()
        {
            break;
        }
    }
}

pub fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("every result carries structuredContent")
}

/// Asserts every stdout line is one JSON-RPC 2.0 message.
pub fn assert_protocol_only(stdout: &[u8]) -> usize {
    let text = std::str::from_utf8(stdout).expect("stdout is UTF-8");
    let mut messages = 0;
    for line in text.split('\n').filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:.200}"));
        assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC: {line:.200}");
        messages += 1;
    }
    messages
}
