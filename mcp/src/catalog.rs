//! The tool surface: every operation of the engine's catalog as a tool with
//! its name, title, description, annotation hints and strict input schema.
//! Conformance tests pin it.

use serde_json::{Value, json};

/// Annotation groups of `interfaces.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolGroup {
    /// read_only, idempotent, closed world.
    ReadOnly,
    /// Imports and records: not read-only, not destructive, not idempotent, closed world.
    Additive,
    /// configure_workload: mutating, non-executing, idempotent, closed world.
    Configure,
    /// Capture execution: mutating, destructive, not idempotent, open world.
    Execute,
}

impl ToolGroup {
    /// `(read_only, destructive, idempotent, open_world)`.
    pub fn hints(self) -> (bool, bool, bool, bool) {
        match self {
            ToolGroup::ReadOnly => (true, false, true, false),
            ToolGroup::Additive => (false, false, false, false),
            ToolGroup::Configure => (false, false, true, false),
            ToolGroup::Execute => (false, true, false, true),
        }
    }
}

/// One tool as advertised.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub group: ToolGroup,
    pub input_schema: Value,
}

/// The output schema shared by every tool: the envelope. Kept minimal
/// because clients pay for it once per tool (it was 330 B × every tool);
/// `docs/mcp.md` documents `schema_version` and the error object's fields.
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ok": { "type": "boolean" },
            "result": { "type": ["object", "null"] },
            "error": { "type": ["object", "null"] }
        },
        "required": ["ok", "result", "error"]
    })
}

/// Every tool, in the order clients see them: the engine's operation
/// catalog.
pub fn tools() -> Vec<ToolSpec> {
    flameox_engine::operations::catalog()
        .iter()
        .map(operation_tool)
        .collect()
}

/// A catalogued operation as a tool.
fn operation_tool(op: &flameox_engine::operations::Operation) -> ToolSpec {
    use flameox_engine::operations::Group;
    ToolSpec {
        name: op.name,
        title: op.title,
        description: op.description,
        group: match op.group {
            Group::ReadOnly => ToolGroup::ReadOnly,
            Group::Additive => ToolGroup::Additive,
            Group::Configure => ToolGroup::Configure,
            Group::Execute => ToolGroup::Execute,
        },
        input_schema: (op.schema)(),
    }
}
