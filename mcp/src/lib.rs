//! flameox's MCP server: rmcp over stdio. It binds a project root at start,
//! advertises a strict, budgeted tool surface, and wraps every engine result
//! in one envelope. No domain logic lives here. See `docs/mcp.md`.

pub mod arguments;
pub mod catalog;
pub mod envelope;
pub mod instructions;
pub mod server;

pub use server::{FlameoxServer, ServerOptions};

use rmcp::ServiceExt;

/// The server name reported in `initialize`.
pub const SERVER_NAME: &str = "flameox";

/// Serves MCP on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(options: ServerOptions) -> Result<(), String> {
    let server = FlameoxServer::new(options);
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
