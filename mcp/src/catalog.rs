//! The tool surface: every tool's name, title, description, annotation group
//! and strict input schema, declared in one table. Conformance tests pin it.

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

pub(crate) const ID: u64 = 200;

pub(crate) fn id_prop(description: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": ID, "description": description })
}

pub(crate) fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
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

/// Every tool, in the order clients see them.
pub fn tools() -> Vec<ToolSpec> {
    let mut tools = core_tools();
    let at = tools
        .iter()
        .position(|t| t.name == "list_capabilities")
        .map_or(tools.len(), |i| i + 1);
    let workload_tools = crate::catalog_workloads::tools();
    tools.splice(at..at, workload_tools);
    // The engine's operation catalog, after the import.
    let at = tools
        .iter()
        .position(|t| t.name == "import_artifact")
        .map_or(tools.len(), |i| i + 1);
    tools.splice(
        at..at,
        flameox_engine::operations::catalog()
            .iter()
            .map(operation_tool),
    );
    tools
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

/// The tools that came before workloads (traces, imports, analyses).
fn core_tools() -> Vec<ToolSpec> {
    use ToolGroup::*;
    vec![
        ToolSpec {
            name: "initialize_workspace",
            title: "Initialize workspace",
            description: "Create the project's .flameox workspace (idempotent). Run once before any other tool.",
            group: Additive,
            input_schema: object(json!({}), &[]),
        },
        ToolSpec {
            name: "list_capabilities",
            title: "List capabilities",
            description: "Input formats this build detects and extracts, and the analyses it answers.",
            group: ReadOnly,
            input_schema: object(json!({}), &[]),
        },
        ToolSpec {
            name: "import_artifact",
            title: "Import artifact",
            description: "Import a trace or benchmark result (pyperf, hyperfine, criterion, Google Benchmark) as a new run. Content decides the format unless kind is given.",
            group: Additive,
            input_schema: object(
                json!({
                    "path": { "type": "string", "minLength": 1, "maxLength": 4096, "description": "File path, relative to source_root (or absolute inside it)." },
                    "source_root": { "type": "string", "enum": ["project", "temp"], "description": "Root the path must resolve inside after symlinks (default project)." },
                    "kind": { "type": "string", "maxLength": 64, "description": "Force a format, e.g. execution_trace (Chrome/Kineto JSON)." },
                    "producer": { "type": "string", "maxLength": 64, "description": "Force the producer, e.g. kineto, chromium." },
                    "variant": { "type": "string", "minLength": 1, "maxLength": 64, "description": "Variant label, e.g. base." },
                    "parameters": { "type": "object", "maxProperties": 32, "additionalProperties": { "type": "string", "maxLength": 200 }, "description": "Workload parameters (string values), kept on the run and its measurements." },
                    "timeout_seconds": { "type": "number", "exclusiveMinimum": 0, "description": "Stop the import after this many seconds (lowers import.timeout_seconds, default 3600); nothing is published." }
                }),
                &["path"],
            ),
        },
        ToolSpec {
            name: "get_native_viewer_plan",
            title: "Native viewer plan",
            description: "How a person opens this artifact in its native viewer (Perfetto UI, speedscope).",
            group: ReadOnly,
            input_schema: object(
                json!({ "target": id_prop("Artifact id (sha256:…).") }),
                &["target"],
            ),
        },
    ]
    .into_iter()
    .chain(crate::experiment_tools::tools())
    .collect()
}
