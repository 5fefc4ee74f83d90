//! The rmcp server handler: workspace binding, tool listing, dispatch of each
//! tool to one engine service, and resources. Tool bodies only translate
//! arguments and wrap results; every rule lives in the engine.

use std::path::PathBuf;
use std::sync::Arc;

use flameox_engine::Workspace;
use flameox_engine::error::FlameoxError;
use flameox_engine::operations::Session;
use flameox_engine::query::SessionCache;
use flameox_engine::services::investigations::investigation;
use flameox_engine::services::plans::{DEFAULT_PLAN_TTL, PlanStore};
use flameox_engine::services::{artifact_detail, inventory};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    ListResourceTemplatesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResourceTemplate, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use crate::catalog::{self, ToolSpec};
use crate::envelope::{self, Reply};
use crate::instructions::instructions;
use crate::progress::McpProgressSource;

/// Where the server is bound, fixed at start.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub project_root: PathBuf,
    /// An explicit `.flameox` folder; default `<project_root>/.flameox`.
    pub workspace: Option<PathBuf>,
}

/// The flameox MCP server.
#[derive(Clone)]
pub struct FlameoxServer {
    project_root: PathBuf,
    workspace_dir: PathBuf,
    cache: SessionCache,
    tools: Arc<Vec<ToolSpec>>,
    plans: Arc<PlanStore>,
}

pub(crate) type ToolResult = Result<Reply, FlameoxError>;

impl FlameoxServer {
    pub fn new(options: ServerOptions) -> FlameoxServer {
        let project_root = options
            .project_root
            .canonicalize()
            .unwrap_or(options.project_root);
        let workspace_dir = options
            .workspace
            .unwrap_or_else(|| project_root.join(".flameox"));
        FlameoxServer {
            project_root,
            workspace_dir,
            cache: SessionCache::default(),
            tools: Arc::new(catalog::tools()),
            plans: Arc::new(PlanStore::new(DEFAULT_PLAN_TTL)),
        }
    }

    /// The same server with capture plans valid for `ttl` (tests use a
    /// short one to prove expiry).
    pub fn with_plan_ttl(mut self, ttl: std::time::Duration) -> FlameoxServer {
        self.plans = Arc::new(PlanStore::new(ttl));
        self
    }

    /// The tools as rmcp advertises them.
    pub fn advertised_tools(&self) -> Vec<Tool> {
        let output = Arc::new(as_object(catalog::output_schema()));
        self.tools
            .iter()
            .map(|spec| {
                let (ro, destructive, idempotent, open) = spec.group.hints();
                Tool::new(
                    spec.name,
                    spec.description,
                    as_object(spec.input_schema.clone()),
                )
                .with_title(spec.title)
                .with_raw_output_schema(output.clone())
                .with_annotations(
                    ToolAnnotations::new()
                        .read_only(ro)
                        .destructive(destructive)
                        .idempotent(idempotent)
                        .open_world(open),
                )
            })
            .collect()
    }

    fn workspace(&self) -> Result<Workspace, FlameoxError> {
        Workspace::open(&self.workspace_dir)
    }

    /// The workspace this server serves, if it exists yet.
    pub fn open_workspace(&self) -> Result<Workspace, FlameoxError> {
        self.workspace()
    }

    /// Runs one tool call to an envelope (public for in-process tests).
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> Option<CallToolResult> {
        let spec = self.tools.iter().find(|t| t.name == name)?;
        let outcome = self.dispatch(spec.name, Value::Object(args), ctx).await;
        Some(match outcome {
            Ok(reply) => envelope::success(name, reply),
            Err(error) => envelope::failure(name, &error),
        })
    }

    /// Runs the catalogued operation in this server's session: paths
    /// confined to the project, progress and cancellation from the request.
    async fn dispatch(
        &self,
        name: &str,
        args: Value,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> ToolResult {
        let op = flameox_engine::operations::by_name(name)
            .ok_or_else(|| FlameoxError::internal(format!("no handler: {name}")))?;
        let workspace_dir = self.workspace_dir.clone();
        let open = move || Workspace::open(&workspace_dir);
        let progress = McpProgressSource::new(ctx);
        let session = Session {
            project_root: &self.project_root,
            open_workspace: &open,
            cache: Some(&self.cache),
            options: Default::default(),
            progress: &progress,
            plans: &self.plans,
            confine_paths: true,
            budgeted: true,
        };
        let outcome = op.call(&session, args).await;
        progress.finish().await;
        let answer = outcome?;
        let mut reply = Reply::new(answer.summary, answer.result);
        if !op.rows.is_empty() && reply.result.get("returned").is_some() {
            reply = reply.paged(op.rows);
        }
        reply.links.extend(answer.links.into_iter().map(|uri| {
            let name = uri.replace("flameox://", "").replacen('/', " ", 1);
            (uri, name)
        }));
        Ok(reply)
    }
}

/// A resource's JSON, null fields left out as in every answer.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, FlameoxError> {
    flameox_engine::operations::to_value(value)
}

fn as_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

impl ServerHandler for FlameoxServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("flameox", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.advertised_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match self.call(&request.name, args, Some(&ctx)).await {
            Some(result) => Ok(result.into()),
            None => Err(ErrorData::invalid_params(
                format!("tool not found: {}", request.name),
                None,
            )),
        }
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = [
            ("flameox://runs/{run_id}", "run"),
            ("flameox://artifacts/{artifact_id}", "artifact"),
            ("flameox://run-sets/{run_set_id}", "run set"),
            (
                "flameox://investigations/{investigation_id}",
                "investigation with its hypotheses",
            ),
            ("flameox://hypotheses/{hypothesis_id}", "hypothesis"),
            ("flameox://findings/{finding_id}", "finding"),
        ]
        .into_iter()
        .chain(crate::experiment_resources::RESOURCE_TEMPLATES)
        .map(|(uri, name)| ResourceTemplate::new(uri, name).with_mime_type("application/json"))
        .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let value = self
            .resource(&request.uri)
            .map_err(|e| ErrorData::resource_not_found(e.message.clone(), None))?;
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri.clone()).with_mime_type("application/json"),
        ])
        .into())
    }
}

impl FlameoxServer {
    /// A resource's JSON summary (no host paths, no bytes).
    pub fn resource(&self, uri: &str) -> Result<Value, FlameoxError> {
        let ws = self.workspace()?;
        if let Some(id) = uri.strip_prefix("flameox://runs/") {
            return to_value(&inventory::show_run(&ws, id)?);
        }
        if let Some(id) = uri.strip_prefix("flameox://artifacts/") {
            return to_value(&artifact_detail::show_artifact(&ws, id, None, None, None)?);
        }
        if let Some(id) = uri.strip_prefix("flameox://run-sets/") {
            return Ok(inventory::evidence_get(&ws, &format!("run_set:{id}"))?["record"].clone());
        }
        if let Some(id) = uri.strip_prefix("flameox://investigations/") {
            return to_value(&investigation::get(&ws, id)?);
        }
        if let Some(id) = uri.strip_prefix("flameox://hypotheses/") {
            return Ok(
                inventory::evidence_get(&ws, &format!("hypothesis:{id}"))?["record"].clone(),
            );
        }
        if let Some(id) = uri.strip_prefix("flameox://findings/") {
            return Ok(inventory::evidence_get(&ws, &format!("finding:{id}"))?["record"].clone());
        }
        if let Some(found) = crate::experiment_resources::resource(&ws, uri) {
            return found;
        }
        Err(FlameoxError::invalid_argument("uri", "unknown resource"))
    }
}
