//! flameox's MCP server (stdio, rmcp). It arrives with issue 3; until then this
//! crate only names the server so the workspace layout is final.

/// The server name reported in `initialize`.
pub const SERVER_NAME: &str = "flameox";
