//! The `query_measurements` tool: decodes its arguments into the engine's
//! request and wraps the page (kept out of `server.rs`, which holds the
//! dispatch table).

use flameox_engine::services::QueryContext;
use flameox_engine::services::measurements::{self, MeasurementsRequest};

use crate::envelope::{Reply, scope_links};
use crate::requests::MeasurementsArgs;
use crate::server::{ToolResult, to_value};

/// One page of measurements as an envelope reply.
pub(crate) async fn query(qc: &QueryContext<'_>, a: MeasurementsArgs) -> ToolResult {
    let request = MeasurementsRequest {
        run: a.target,
        name_prefix: a.name_prefix,
        include_warmups: a.include_warmups.unwrap_or(false),
        limit: a.limit,
        cursor: a.cursor,
    };
    let result = measurements::query_measurements(qc, &request).await?;
    let what = match &result.scope {
        Some(scope) => format!("measurements of {}", scope.requested),
        None => "measurements".to_owned(),
    };
    let reply = Reply::new(what, to_value(&result)?).paged("measurements");
    Ok(match &result.scope {
        Some(scope) => scope_links(reply, scope),
        None => reply,
    })
}
