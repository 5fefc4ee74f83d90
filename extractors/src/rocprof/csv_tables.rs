//! rocprofv3's CSV output — its default (`--output-format csv`): one file
//! per record type, named `<pid>_<table>.csv` — `kernel_trace`,
//! `memory_copy_trace`, `hip_api_trace`, `hsa_api_trace`,
//! `marker_api_trace`, `rccl_api_trace`, and `agent_info` (the agents, to
//! number the GPUs). A file's header row says which table it is, so one
//! file imports on its own; the output folder imports as one artifact,
//! its kernels linked to their launches by correlation id.
//!
//! Columns are found by name (the set differs between releases: 6.2 has
//! `Private_Segment_Size`, later ones `Stream_Id`, `LDS_Block_Size`,
//! `Scratch_Size` and `"Agent 4"` for `4`); a row missing a time is
//! skipped and counted, as in the JSON reader.

use std::collections::HashMap;
use std::io::Read;

use serde_json::json;

use crate::api::ExtractError;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::{EventKind, kernel_kind};
use crate::trace_events::tracks::Ident;

use super::evidence::{Counts, Pending, push, stream_track};

/// Which rocprofv3 table a CSV file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Kernels,
    Copies,
    /// HIP, HSA, marker or RCCL API calls (the `Domain` column says which).
    ApiCalls,
    Agents,
}

/// The table a header row (column names, unquoted) is, if it is one.
pub fn table_of_header(columns: &[&str]) -> Option<Table> {
    let has = |c: &str| columns.contains(&c);
    let timed = has("Start_Timestamp") && has("End_Timestamp") && has("Correlation_Id");
    if timed && has("Kernel_Name") && has("Agent_Id") && has("Kind") {
        Some(Table::Kernels)
    } else if timed && has("Direction") && has("Source_Agent_Id") {
        Some(Table::Copies)
    } else if timed && has("Domain") && has("Function") && has("Thread_Id") {
        Some(Table::ApiCalls)
    } else if has("Node_Id") && has("Agent_Type") && has("Logical_Node_Id") {
        Some(Table::Agents)
    } else {
        None
    }
}

/// The table a first line (the header) is: the sniffer's view.
pub fn table_of_first_line(line: &str) -> Option<Table> {
    let columns: Vec<&str> = line
        .trim_end_matches(['\r', '\n'])
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
        .collect();
    table_of_header(&columns)
}

/// Whether a flat folder's files are a rocprofv3 CSV output: every file
/// a `.csv`, at least one a trace table (kernels, copies or API calls) by
/// its header. Its statistics and counter files belong to it and are
/// counted, not read.
pub fn is_rocprof_csv_folder(dir: &std::path::Path, files: &[String]) -> bool {
    if files.is_empty() || !files.iter().all(|f| f.ends_with(".csv")) {
        return false;
    }
    files.iter().any(|name| {
        let Ok(file) = std::fs::File::open(dir.join(name)) else {
            return false;
        };
        let mut line = String::new();
        let mut head = std::io::BufReader::new(file.take(64 * 1024));
        std::io::BufRead::read_line(&mut head, &mut line).is_ok()
            && matches!(
                table_of_first_line(&line),
                Some(Table::Kernels | Table::Copies | Table::ApiCalls)
            )
    })
}

/// Agent node ids to GPU indexes (the GPUs numbered in node order).
#[derive(Debug, Default)]
pub struct Agents {
    gpu_of_node: HashMap<i64, i64>,
    /// Per GPU index: its name and compute units.
    pub gpus: Vec<(String, Option<i64>)>,
}

impl Agents {
    /// The device a kernel or copy on agent `id` is: its GPU index when
    /// the agents are known, else the agent's own number.
    fn device(&self, id: i64) -> i64 {
        if self.gpu_of_node.is_empty() {
            id
        } else {
            self.gpu_of_node.get(&id).copied().unwrap_or(NONE)
        }
    }

    fn is_gpu(&self, id: i64) -> bool {
        self.gpu_of_node.is_empty() || self.gpu_of_node.contains_key(&id)
    }
}

/// A header's column positions.
struct Columns(HashMap<String, usize>);

impl Columns {
    fn new(header: &csv::StringRecord) -> Columns {
        Columns(
            header
                .iter()
                .enumerate()
                .map(|(i, c)| (c.trim().to_owned(), i))
                .collect(),
        )
    }

    fn text<'r>(&self, row: &'r csv::StringRecord, name: &str) -> Option<&'r str> {
        self.0.get(name).and_then(|&i| row.get(i)).map(str::trim)
    }

    fn int(&self, row: &csv::StringRecord, name: &str) -> Option<i64> {
        self.text(row, name).and_then(|t| t.parse().ok())
    }

    fn uint(&self, row: &csv::StringRecord, name: &str) -> Option<u64> {
        self.text(row, name).and_then(|t| t.parse().ok())
    }

    /// An agent id: `4` or `Agent 4`.
    fn agent(&self, row: &csv::StringRecord, name: &str) -> Option<i64> {
        let text = self.text(row, name)?;
        text.strip_prefix("Agent ")
            .unwrap_or(text)
            .trim()
            .parse()
            .ok()
    }

    /// The first of `names` present in the row.
    fn first_int(&self, row: &csv::StringRecord, names: &[&str]) -> Option<i64> {
        names.iter().find_map(|n| self.int(row, n))
    }
}

/// Reads one table's rows into `trace`; returns the table read (`None`
/// when the header is no rocprofv3 table's).
pub fn read_table(
    input: impl Read,
    trace: &mut TraceBuilder,
    agents: &mut Agents,
    counts: &mut Counts,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<Table>, ExtractError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(input);
    let header = reader.headers().map_err(parse_error)?.clone();
    let names: Vec<&str> = header.iter().map(str::trim).collect();
    let Some(table) = table_of_header(&names) else {
        return Ok(None);
    };
    let columns = Columns::new(&header);
    let mut row = csv::StringRecord::new();
    let mut rows = 0u64;
    while reader.read_record(&mut row).map_err(parse_error)? {
        rows += 1;
        if rows.is_multiple_of(65_536) && cancelled() {
            return Err(ExtractError::Cancelled);
        }
        match table {
            Table::Kernels => kernel(trace, agents, &columns, &row, counts),
            Table::Copies => copy(trace, agents, &columns, &row, counts),
            Table::ApiCalls => api_call(trace, &columns, &row, counts),
            Table::Agents => agent(agents, &columns, &row),
        }
    }
    Ok(Some(table))
}

fn parse_error(e: csv::Error) -> ExtractError {
    ExtractError::Parse {
        message: format!("rocprofv3 CSV: {e}"),
        offset: e.position().map(|p| p.byte()),
    }
}

fn agent(agents: &mut Agents, c: &Columns, row: &csv::StringRecord) {
    if c.text(row, "Agent_Type") != Some("GPU") {
        return;
    }
    let Some(node) = c.int(row, "Node_Id") else {
        return;
    };
    let index = agents.gpu_of_node.len() as i64;
    agents.gpu_of_node.insert(node, index);
    let name = c
        .text(row, "Product_Name")
        .or_else(|| c.text(row, "Name"))
        .unwrap_or("GPU");
    agents.gpus.push((name.to_owned(), c.int(row, "Cu_Count")));
}

fn kernel(
    trace: &mut TraceBuilder,
    agents: &Agents,
    c: &Columns,
    row: &csv::StringRecord,
    counts: &mut Counts,
) {
    *counts.by_type.entry("kernel_dispatch").or_default() += 1;
    let agent = c.agent(row, "Agent_Id").unwrap_or(NONE);
    if !agents.is_gpu(agent) {
        trace.log.note("dispatch_on_unknown_agent", || {
            "a kernel dispatch names an agent that is not a GPU of agent_info; skipped".to_owned()
        });
        return;
    }
    let device = agents.device(agent);
    let queue = c.uint(row, "Queue_Id");
    let stream = c
        .int(row, "Stream_Id")
        .or_else(|| queue.and_then(|q| i64::try_from(q).ok()))
        .unwrap_or(NONE);
    let track = stream_track(trace, device, stream);
    let dims =
        |prefix: &str| ["X", "Y", "Z"].map(|d| c.int(row, &format!("{prefix}_{d}")).unwrap_or(0));
    let args = json!({
        "kernel_id": c.int(row, "Kernel_Id"),
        "dispatch_id": c.int(row, "Dispatch_Id"),
        "queue": queue,
        "grid": dims("Grid_Size"),
        "workgroup": dims("Workgroup_Size"),
        "lds_bytes": c.first_int(row, &["LDS_Block_Size", "Group_Segment_Size"]),
        "scratch_bytes": c.first_int(row, &["Scratch_Size", "Private_Segment_Size"]),
        "vgpr": c.int(row, "VGPR_Count"),
        "sgpr": c.int(row, "SGPR_Count"),
        "thread_id": c.int(row, "Thread_Id"),
    })
    .to_string();
    let unnamed;
    let name = match c.text(row, "Kernel_Name").filter(|n| !n.is_empty()) {
        Some(n) => n,
        None => {
            unnamed = format!("kernel {}", c.int(row, "Kernel_Id").unwrap_or(NONE));
            &unnamed
        }
    };
    push(
        trace,
        track,
        Pending {
            start: c.uint(row, "Start_Timestamp"),
            end: c.uint(row, "End_Timestamp"),
            name,
            category: "kernel_dispatch",
            kind: kernel_kind(name),
            fields: DeviceFields {
                device,
                stream,
                correlation: c.int(row, "Correlation_Id").unwrap_or(NONE),
                ..DeviceFields::ABSENT
            },
            args: Some(args),
        },
        counts,
    );
}

fn copy(
    trace: &mut TraceBuilder,
    agents: &Agents,
    c: &Columns,
    row: &csv::StringRecord,
    counts: &mut Counts,
) {
    *counts.by_type.entry("memory_copy").or_default() += 1;
    // A copy belongs to the GPU it touches (the destination first).
    let gpu = |name: &str| c.agent(row, name).filter(|a| agents.is_gpu(*a) && *a != 0);
    let device = gpu("Destination_Agent_Id")
        .or_else(|| gpu("Source_Agent_Id"))
        .map_or(NONE, |a| agents.device(a));
    let stream = c.int(row, "Stream_Id").unwrap_or(NONE);
    let track = stream_track(trace, device, stream);
    let name = format!(
        "MEMORY_COPY_{}",
        c.text(row, "Direction").unwrap_or("UNKNOWN")
    );
    push(
        trace,
        track,
        Pending {
            start: c.uint(row, "Start_Timestamp"),
            end: c.uint(row, "End_Timestamp"),
            name: &name,
            category: "memory_copy",
            kind: EventKind::Memcpy,
            fields: DeviceFields {
                device,
                stream,
                correlation: c.int(row, "Correlation_Id").unwrap_or(NONE),
                bytes: c.int(row, "Bytes").unwrap_or(NONE),
                ..DeviceFields::ABSENT
            },
            args: None,
        },
        counts,
    );
}

/// A call's category and kind from its `Domain` (`HIP_RUNTIME_API`,
/// `HSA_CORE_API`, `MARKER_CORE_API`, `RCCL_API`, …).
fn api_kind(domain: &str) -> (&'static str, EventKind) {
    if domain.starts_with("HSA") {
        ("hsa_api", EventKind::DriverApi)
    } else if domain.starts_with("MARKER") {
        ("marker_api", EventKind::UserAnnotation)
    } else if domain.starts_with("RCCL") {
        ("rccl_api", EventKind::Communication)
    } else {
        ("hip_api", EventKind::RuntimeApi)
    }
}

fn api_call(trace: &mut TraceBuilder, c: &Columns, row: &csv::StringRecord, counts: &mut Counts) {
    let (category, kind) = api_kind(c.text(row, "Domain").unwrap_or(""));
    *counts.by_type.entry(category).or_default() += 1;
    let pid = c.int(row, "Process_Id").unwrap_or(0);
    let tid = c.int(row, "Thread_Id").unwrap_or(pid);
    let track = trace.tracks.thread(Ident::Int(pid), Ident::Int(tid));
    let name = c.text(row, "Function").unwrap_or(category).to_owned();
    push(
        trace,
        track,
        Pending {
            start: c.uint(row, "Start_Timestamp"),
            end: c.uint(row, "End_Timestamp"),
            name: &name,
            category,
            kind,
            fields: DeviceFields {
                correlation: c.int(row, "Correlation_Id").unwrap_or(NONE),
                ..DeviceFields::ABSENT
            },
            args: None,
        },
        counts,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_of_each_release_name_their_table() {
        let v62 = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\"";
        let v64 = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\"";
        assert_eq!(table_of_first_line(v62), Some(Table::Kernels));
        assert_eq!(table_of_first_line(v64), Some(Table::Kernels));
        assert_eq!(
            table_of_first_line(
                "\"Kind\",\"Direction\",\"Source_Agent_Id\",\"Destination_Agent_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\r\n"
            ),
            Some(Table::Copies)
        );
        assert_eq!(
            table_of_first_line(
                "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\""
            ),
            Some(Table::ApiCalls)
        );
        assert_eq!(
            table_of_first_line("\"Name\",\"Calls\",\"TotalDurationNs\""),
            None
        );
        assert_eq!(table_of_first_line("a,b,c"), None);
    }

    #[test]
    fn api_domains_map_to_kinds() {
        assert_eq!(api_kind("HIP_RUNTIME_API").1, EventKind::RuntimeApi);
        assert_eq!(api_kind("HIP_COMPILER_API").0, "hip_api");
        assert_eq!(api_kind("HSA_AMD_EXT_API").1, EventKind::DriverApi);
        assert_eq!(api_kind("MARKER_CORE_API").1, EventKind::UserAnnotation);
        assert_eq!(api_kind("RCCL_API").1, EventKind::Communication);
    }
}
