//! flameox's MCP server: rmcp over stdio. It binds a project root at start,
//! advertises a strict, budgeted tool surface, and wraps every engine result
//! in one envelope. No domain logic lives here. See `docs/mcp.md`.

pub mod catalog;
pub mod envelope;
mod experiment_resources;
pub mod instructions;
pub mod progress;
pub mod server;

pub use server::{FlameoxServer, ServerOptions};

use rmcp::ServiceExt;

/// The server name reported in `initialize`.
pub const SERVER_NAME: &str = "flameox";

/// Serves MCP on stdin/stdout until the client closes the stream.
/// Diagnostics go to stderr at `log_level` (error, warn, info, debug, trace);
/// stdout carries protocol messages only.
pub async fn serve_stdio(options: ServerOptions, log_level: &str) -> Result<(), String> {
    let level = log_level
        .parse::<tracing::Level>()
        .map_err(|_| format!("log level {log_level} is not error, warn, info, debug or trace"))?;
    // Ignore a second install (in-process tests may serve twice).
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false)
        .try_init();
    tracing::info!(project_root = %options.project_root.display(), "flameox MCP server starting");
    let server = FlameoxServer::new(options);
    // Detached operations whose worker died while no server ran are ended
    // now (their process trees too), so the first get reads a terminal state.
    if let Ok(ws) = server.open_workspace() {
        let recovered = flameox_engine::detached::recover_all(&ws);
        if !recovered.is_empty() {
            tracing::warn!(
                ?recovered,
                "detached operations left by dead workers were ended"
            );
        }
    }
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP initialize failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("MCP server stopped: {e}"))?;
    Ok(())
}

/// What `flameox mcp inspect --json` prints: the exact tool list and the
/// instructions a client sees.
pub fn inspect(options: ServerOptions) -> serde_json::Value {
    let server = FlameoxServer::new(options);
    serde_json::json!({
        "schema_version": 1,
        "server": { "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") },
        "instructions": instructions::instructions(),
        "tools": server.advertised_tools(),
    })
}
