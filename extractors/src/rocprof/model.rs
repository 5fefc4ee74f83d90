//! The parts of a rocprofiler-sdk tool JSON document (`rocprofv3
//! --output-format json`) that become evidence: the run's pid and
//! command, its agents (CPUs and GPUs), the names of buffer-record kinds
//! and operations, kernel symbols, and the buffer records themselves
//! (kernel dispatches, memory copies, HIP/HSA/marker/RCCL API calls).
//! Everything else is ignored; every field defaults, so a record missing
//! one is still read (and a missing time skips it, counted).

use std::collections::HashMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Document {
    #[serde(rename = "rocprofiler-sdk-tool")]
    pub tool: Vec<ToolOutput>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolOutput {
    pub metadata: Metadata,
    pub agents: Vec<Agent>,
    pub strings: Strings,
    pub kernel_symbols: Vec<KernelSymbol>,
    pub buffer_records: BufferRecords,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Metadata {
    pub pid: Option<i64>,
    pub command: Vec<String>,
    pub node: Node,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Node {
    pub hostname: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(default)]
pub struct Handle {
    pub handle: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Agent {
    pub id: Handle,
    /// 1 = CPU, 2 = GPU.
    #[serde(rename = "type")]
    pub kind: i64,
    /// The GPU's index among GPUs (-1 for CPUs).
    pub gpu_index: Option<i64>,
    pub logical_node_type_id: Option<i64>,
    pub name: Option<String>,
    pub product_name: Option<String>,
    /// Compute units (the SMs of launch geometry).
    pub cu_count: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Strings {
    /// Indexed by a buffer record's `kind`: the kind's name and the names
    /// of its operations (indexed by `operation`).
    pub buffer_records: Vec<KindNames>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct KindNames {
    pub kind: String,
    pub operations: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct KernelSymbol {
    pub kernel_id: u64,
    pub kernel_name: String,
    pub formatted_kernel_name: String,
    pub truncated_kernel_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct BufferRecords {
    pub kernel_dispatch: Vec<KernelDispatch>,
    pub memory_copy: Vec<MemoryCopy>,
    pub hip_api: Vec<ApiCall>,
    pub hsa_api: Vec<ApiCall>,
    pub marker_api: Vec<ApiCall>,
    pub rccl_api: Vec<ApiCall>,
}

#[derive(Debug, Default, Deserialize, Clone, Copy)]
#[serde(default)]
pub struct Correlation {
    pub internal: u64,
    pub external: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct KernelDispatch {
    pub kind: usize,
    pub operation: usize,
    pub thread_id: Option<i64>,
    pub correlation_id: Correlation,
    pub start_timestamp: Option<u64>,
    pub end_timestamp: Option<u64>,
    pub dispatch_info: DispatchInfo,
    pub stream_id: Handle,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DispatchInfo {
    pub agent_id: Handle,
    pub queue_id: Handle,
    pub kernel_id: u64,
    pub dispatch_id: u64,
    pub private_segment_size: u64,
    pub group_segment_size: u64,
    pub workgroup_size: Dim3,
    pub grid_size: Dim3,
}

#[derive(Debug, Default, Deserialize, Clone, Copy)]
#[serde(default)]
pub struct Dim3 {
    pub x: u64,
    pub y: u64,
    pub z: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MemoryCopy {
    pub kind: usize,
    pub operation: usize,
    pub thread_id: Option<i64>,
    pub correlation_id: Correlation,
    pub start_timestamp: Option<u64>,
    pub end_timestamp: Option<u64>,
    pub dst_agent_id: Handle,
    pub src_agent_id: Handle,
    pub bytes: u64,
    pub stream_id: Handle,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ApiCall {
    pub kind: usize,
    pub operation: usize,
    pub thread_id: Option<i64>,
    pub correlation_id: Correlation,
    pub start_timestamp: Option<u64>,
    pub end_timestamp: Option<u64>,
}

impl ToolOutput {
    /// Each agent's GPU index (CPUs: none).
    pub fn gpu_of(&self) -> HashMap<Handle, i64> {
        self.agents
            .iter()
            .filter(|a| a.kind == 2)
            .filter_map(|a| {
                let index = a.gpu_index.filter(|i| *i >= 0).or(a.logical_node_type_id)?;
                Some((a.id, index))
            })
            .collect()
    }

    /// The name of operation `operation` of buffer-record kind `kind`.
    pub fn operation_name(&self, kind: usize, operation: usize) -> Option<&str> {
        self.strings
            .buffer_records
            .get(kind)?
            .operations
            .get(operation)
            .map(String::as_str)
    }

    /// Kernel names by id: the formatted (demangled, no arguments) name.
    pub fn kernel_names(&self) -> HashMap<u64, &str> {
        self.kernel_symbols
            .iter()
            .map(|k| {
                let name = [
                    &k.formatted_kernel_name,
                    &k.truncated_kernel_name,
                    &k.kernel_name,
                ]
                .into_iter()
                .find(|n| !n.is_empty())
                .map_or("", String::as_str);
                (k.kernel_id, name)
            })
            .collect()
    }
}
