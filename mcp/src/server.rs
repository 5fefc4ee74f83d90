//! The rmcp server handler: workspace binding, tool listing, dispatch of each
//! tool to one engine service, and resources. Tool bodies only translate
//! arguments and wrap results; every rule lives in the engine.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use flameox_engine::Workspace;
use flameox_engine::error::FlameoxError;
use flameox_engine::query::SessionCache;
use flameox_engine::services::confine::confine_import_path;
use flameox_engine::services::import::{ImportRequest, import_artifact};
use flameox_engine::services::import_deadline::{ImportDeadline, deadline_error};
use flameox_engine::services::{QueryContext, capabilities, inventory};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    ListResourceTemplatesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResourceTemplate, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::arguments;
use crate::catalog::{self, ToolSpec};
use crate::envelope::{self, Reply};
use crate::instructions::instructions;
use crate::progress::McpProgress;
use crate::requests::*;

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
    pub(crate) plans: Arc<crate::plans::PlanStore>,
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
            plans: Arc::new(crate::plans::PlanStore::new(crate::plans::DEFAULT_PLAN_TTL)),
        }
    }

    /// The same server with capture plans valid for `ttl` (tests use a
    /// short one to prove expiry).
    pub fn with_plan_ttl(mut self, ttl: std::time::Duration) -> FlameoxServer {
        self.plans = Arc::new(crate::plans::PlanStore::new(ttl));
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

    /// Runs one tool call to an envelope (public for in-process tests).
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> Option<CallToolResult> {
        let spec = self.tools.iter().find(|t| t.name == name)?;
        let outcome = match arguments::check(name, &spec.input_schema, &args) {
            Ok(()) => self.dispatch(name, Value::Object(args), ctx).await,
            Err(e) => Err(e),
        };
        Some(match outcome {
            Ok(reply) => envelope::success(name, reply),
            Err(error) => envelope::failure(name, &error),
        })
    }

    async fn dispatch(
        &self,
        name: &str,
        args: Value,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> ToolResult {
        if name == "initialize_workspace" {
            let outcome = inventory::init(&self.project_root)?;
            return Ok(Reply::new("workspace ready", to_value(&outcome)?));
        }
        if name == "list_capabilities" {
            return Ok(Reply::new(
                "capabilities",
                to_value(&capabilities::capabilities())?,
            ));
        }
        let ws = self.workspace()?;
        let qc = QueryContext {
            ws: &ws,
            cache: Some(&self.cache),
            options: Default::default(),
        };
        if let Some(op) = flameox_engine::operations::by_name(name) {
            let answer = (op.run)(&qc, args).await?;
            let mut reply = Reply::new(answer.summary, answer.result);
            if !op.rows.is_empty() && reply.result.get("returned").is_some() {
                reply = reply.paged(op.rows);
            }
            reply.links.extend(answer.links.into_iter().map(|uri| {
                (
                    uri.clone(),
                    uri.replace("flameox://", "").replacen('/', " ", 1),
                )
            }));
            return Ok(reply);
        }
        match name {
            "import_artifact" => self.import(&ws, decode(args)?, ctx).await,
            "get_native_viewer_plan" => {
                let a: ArtifactArgs = decode(args)?;
                Ok(Reply::new(
                    "viewer plan",
                    to_value(&capabilities::viewer_plan(&ws, &a.target)?)?,
                ))
            }
            other => if other.contains("experiment") {
                crate::experiment_tools::call(other, &ws, args, ctx).await
            } else {
                crate::workload_tools::call(self, other, &ws, args, ctx).await
            }
            .unwrap_or_else(|| Err(FlameoxError::internal(format!("no handler: {other}")))),
        }
    }

    async fn import(
        &self,
        ws: &Workspace,
        a: ImportArgs,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> ToolResult {
        let path = confine_import_path(
            &self.project_root,
            &a.path,
            a.source_root.as_deref().unwrap_or("project"),
        )?;
        let timeout = match a.timeout_seconds {
            Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t.min(1e9))),
            Some(_) => {
                return Err(FlameoxError::invalid_argument(
                    "timeout_seconds",
                    "must be a positive number of seconds",
                ));
            }
            None => None,
        };
        let request = ImportRequest {
            path,
            more_paths: Vec::new(),
            kind: a.kind,
            producer: a.producer,
            variant: a.variant,
            parameters: a.parameters,
            timeout,
        };
        let deadline = ImportDeadline::of(ws, timeout);
        let (reporter, forwarder) = McpProgress::start(ctx);
        let ws = ws.clone();
        let task = tokio::task::spawn_blocking(move || import_artifact(&ws, &request, &reporter));
        // The import stops itself at its deadline; this only answers the
        // call if an extractor missed its cancellation polls for much longer.
        let outcome = match tokio::time::timeout(deadline.limit + IMPORT_STOP_GRACE, task).await {
            Ok(joined) => {
                joined.map_err(|e| FlameoxError::internal(format!("import task failed: {e}")))?
            }
            Err(_) => Err(deadline_error(deadline)
                .detail("still_stopping", true)
                .remedy("the import did not stop in time; its staging folder is removed by the next import or `flameox recover`")),
        };
        forwarder.finish().await;
        let result = outcome?;
        Ok(
            Reply::new(format!("imported {}", result.kind), to_value(&result)?)
                .link_run(&result.run_id)
                .link_artifact(&result.artifact_id),
        )
    }
}

/// How long past its deadline an import may take to stop before the call
/// is answered without it.
const IMPORT_STOP_GRACE: Duration = Duration::from_secs(30);

pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, FlameoxError> {
    serde_json::to_value(value)
        .map_err(|e| FlameoxError::internal(format!("serializing a result: {e}")))
}

pub(crate) fn decode<T: DeserializeOwned>(args: Value) -> Result<T, FlameoxError> {
    serde_json::from_value(args)
        .map_err(|e| FlameoxError::invalid_argument("arguments", e.to_string()))
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
        ]
        .into_iter()
        .chain(crate::experiment_tools::RESOURCE_TEMPLATES)
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
            return to_value(&inventory::show_artifact(&ws, id)?);
        }
        if let Some(id) = uri.strip_prefix("flameox://run-sets/") {
            return Ok(inventory::evidence_get(&ws, &format!("run_set:{id}"))?["record"].clone());
        }
        if let Some(found) = crate::experiment_tools::resource(&ws, uri) {
            return found;
        }
        Err(FlameoxError::invalid_argument("uri", "unknown resource"))
    }
}
