//! The launcher a client configuration holds (the absolute path of a
//! flameox executable and the fixed arguments `mcp serve --project-root .`)
//! and its verification: start it as the client would and complete an MCP
//! initialize.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

/// The fixed arguments of every launcher. Never `--init` and never a
/// workspace: the client's launch folder is the project root, and each
/// project is initialized deliberately.
pub const SERVE_ARGS: [&str; 4] = ["mcp", "serve", "--project-root", "."];

/// A command and its arguments, as a client configuration stores them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Launcher {
    pub command: String,
    pub args: Vec<String>,
}

impl Launcher {
    /// The launcher for the executable at `path`.
    pub fn for_executable(path: &Path) -> Launcher {
        Launcher {
            command: path.to_string_lossy().into_owned(),
            args: SERVE_ARGS.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    /// Reads `{"command": …, "args": […]}` (`None` without a command).
    pub fn from_json(value: &Value) -> Option<Launcher> {
        let command = value.get("command")?.as_str()?.to_owned();
        let args = value
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Some(Launcher { command, args })
    }
}

/// What the server said to an initialize.
#[derive(Debug, Clone, Serialize)]
pub struct Handshake {
    pub server_name: String,
    pub server_version: String,
    pub protocol_version: String,
    pub elapsed_ms: u64,
}

/// How long a launcher has to answer initialize (a cold start of a debug
/// build on a busy machine included).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts `launcher` in `cwd`, sends an MCP initialize over stdio and waits
/// for the answer. Anything but a `flameox` server answering in time is an
/// error that says what happened (the start failure, the exit status and
/// the end of stderr, or the timeout).
pub fn handshake(launcher: &Launcher, cwd: &Path, timeout: Duration) -> Result<Handshake, String> {
    let started = Instant::now();
    let mut child = Command::new(&launcher.command)
        .args(&launcher.args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", launcher.command))?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the launcher's standard streams could not be opened".to_owned());
    };
    let stderr_tail = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.by_ref().take(1 << 20).read_to_end(&mut bytes);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let start = text.len().saturating_sub(600);
        text.get(start..).unwrap_or_default().trim().to_owned()
    });
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "flameox-setup", "version": env!("CARGO_PKG_VERSION") }
        }
    });
    let outcome = (|| {
        writeln!(stdin, "{initialize}")
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("the launcher closed its input: {e}"))?;
        loop {
            let left = timeout.saturating_sub(started.elapsed());
            let line = match received.recv_timeout(left) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no answer to initialize within {} s",
                        timeout.as_secs()
                    ));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the launcher exited without answering initialize".to_owned());
                }
            };
            let message: Value = serde_json::from_str(&line).map_err(|_| {
                format!(
                    "the launcher wrote something that is not MCP on stdout: {:?}",
                    line.chars().take(120).collect::<String>()
                )
            })?;
            if message.get("id") != Some(&Value::from(1)) {
                continue;
            }
            let result = message
                .get("result")
                .ok_or_else(|| format!("initialize failed: {}", message["error"]))?;
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            let handshake = Handshake {
                server_name: text(&result["serverInfo"]["name"]),
                server_version: text(&result["serverInfo"]["version"]),
                protocol_version: text(&result["protocolVersion"]),
                elapsed_ms: started.elapsed().as_millis() as u64,
            };
            if handshake.server_name != "flameox" {
                return Err(format!(
                    "the launcher is an MCP server named {:?}, not flameox",
                    handshake.server_name
                ));
            }
            let initialized = serde_json::json!({
                "jsonrpc": "2.0", "method": "notifications/initialized"
            });
            let _ = writeln!(stdin, "{initialized}");
            return Ok(handshake);
        }
    })();
    drop(stdin);
    // Closing stdin ends a well-behaved server; give it a moment, then stop it.
    let deadline = Instant::now() + Duration::from_secs(2);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                break child.wait().ok();
            }
        }
    };
    let tail = stderr_tail.join().unwrap_or_default();
    outcome.map_err(|reason| {
        let mut reason = reason;
        if let Some(status) = status.filter(|s| !s.success()) {
            reason += &format!(" ({status})");
        }
        if !tail.is_empty() {
            reason += &format!("; stderr: {tail}");
        }
        reason
    })
}

/// The executable setup writes into launchers: `explicit`, or the running
/// one.
pub fn resolve_executable(explicit: Option<&Path>) -> Result<PathBuf, String> {
    match explicit {
        // A path the user chose stays as written (a stable symlink such as
        // ~/.local/bin/flameox survives upgrades), made absolute.
        Some(path) => {
            let absolute =
                std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if absolute.is_file() {
                Ok(absolute)
            } else {
                Err(format!("{} is not a file", absolute.display()))
            }
        }
        None => std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| format!("cannot find this executable: {e}")),
    }
}
