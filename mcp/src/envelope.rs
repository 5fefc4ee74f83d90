//! The result envelope: one concise text line that states the answer's size,
//! and `structuredContent = {schema_version, ok, result, error}` — one copy
//! of the payload.

use flameox_engine::FlameoxError;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use serde_json::{Value, json};

pub const ENVELOPE_SCHEMA_VERSION: u32 = 1;

/// A successful answer before wrapping.
pub struct Reply {
    pub result: Value,
    /// What was asked, e.g. `hotspots: run 0193…`.
    pub what: String,
    /// `(returned, total, noun)` for pages.
    pub page: Option<(u64, u64, &'static str)>,
    /// Resource links for runs and artifacts the answer mentions.
    pub links: Vec<(String, String)>,
}

impl Reply {
    pub fn new(what: impl Into<String>, result: Value) -> Reply {
        Reply {
            result,
            what: what.into(),
            page: None,
            links: Vec::new(),
        }
    }

    /// Reads `returned` / `total` from the result itself.
    pub fn paged(mut self, noun: &'static str) -> Reply {
        let returned = self
            .result
            .get("returned")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let total = self
            .result
            .get("total")
            .and_then(Value::as_u64)
            .unwrap_or(returned);
        self.page = Some((returned, total, noun));
        self
    }
}

/// `1,234`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Wraps a success.
pub fn success(tool: &str, reply: Reply) -> CallToolResult {
    let payload = json!({ "schema_version": ENVELOPE_SCHEMA_VERSION, "ok": true, "result": reply.result, "error": null });
    let tokens = payload.to_string().len() / 4;
    let mut parts = vec![format!("{tool}: {}", reply.what)];
    if let Some((returned, total, noun)) = reply.page {
        parts.push(format!(
            "{} of {} {noun}",
            thousands(returned),
            thousands(total)
        ));
    }
    parts.push(format!("~{} tok", thousands(tokens as u64)));
    if reply
        .result
        .get("next_cursor")
        .is_some_and(|c| !c.is_null())
    {
        parts.push("next cursor".into());
    }
    let mut content = vec![ContentBlock::text(format!("[{}]", parts.join(" | ")))];
    for (uri, name) in reply.links {
        content.push(ContentBlock::resource_link(
            Resource::new(uri, name).with_mime_type("application/json"),
        ));
    }
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(payload);
    result.is_error = Some(false);
    result
}

/// Wraps a domain error (`isError: true`).
pub fn failure(tool: &str, error: &FlameoxError) -> CallToolResult {
    let mut error_value =
        serde_json::to_value(error).unwrap_or_else(|_| json!({ "code": "INTERNAL_ERROR" }));
    // A recovery is rendered per transport: here the tool call; the command
    // line is the terminal's rendering of the same step.
    if let Some(recovery) = error_value
        .get_mut("recovery")
        .and_then(serde_json::Value::as_object_mut)
    {
        recovery.remove("next_command");
    }
    let payload = json!({ "schema_version": ENVELOPE_SCHEMA_VERSION, "ok": false, "result": null, "error": error_value });
    let mut line = format!(
        "[{tool}: error {} | {}]",
        error.code.as_str(),
        error.message
    );
    if let Some(r) = &error.recovery {
        line.push_str(&format!(" next: {} {}", r.next_tool, r.next_arguments));
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(line)]);
    result.structured_content = Some(payload);
    result.is_error = Some(true);
    result
}
