//! The subset of Perfetto's trace protos that flameox reads, hand-declared
//! for prost with Perfetto's field numbers (`protos/perfetto/trace/…`).
//!
//! Oneof members are declared as plain optional fields (the wire format is
//! the same). Strings that come from the kernel or from applications are
//! declared as bytes and converted lossily, so one bad `comm` does not make
//! a whole ftrace bundle undecodable. Everything not declared here is
//! skipped by prost without allocation.

// The derive generates the field accessors; docs live on the messages.
#![allow(missing_docs)]

use prost::Message;

/// One packet. Its sub-messages are boxed: a packet carries one of them,
/// and the unboxed struct was 1.9 KB to build and move per packet.
#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, boxed, tag = "2")]
    pub process_tree: Option<Box<ProcessTree>>,
    #[prost(message, optional, boxed, tag = "9")]
    pub process_stats: Option<Box<ProcessStats>>,
    #[prost(message, optional, boxed, tag = "6")]
    pub clock_snapshot: Option<Box<ClockSnapshot>>,
    #[prost(message, optional, boxed, tag = "11")]
    pub track_event: Option<Box<TrackEvent>>,
    #[prost(message, optional, boxed, tag = "60")]
    pub track_descriptor: Option<Box<TrackDescriptor>>,
    #[prost(message, optional, boxed, tag = "43")]
    pub process_descriptor: Option<Box<ProcessDescriptor>>,
    #[prost(message, optional, boxed, tag = "44")]
    pub thread_descriptor: Option<Box<ThreadDescriptor>>,
    #[prost(message, optional, boxed, tag = "1")]
    pub ftrace_events: Option<Box<FtraceEventBundle>>,
    #[prost(message, optional, boxed, tag = "66")]
    pub perf_sample: Option<Box<PerfSample>>,
    #[prost(message, optional, boxed, tag = "54")]
    pub streaming_profile_packet: Option<Box<StreamingProfilePacket>>,
    #[prost(message, optional, boxed, tag = "52")]
    pub gpu_counter_event: Option<Box<GpuCounterEvent>>,
    #[prost(bytes = "vec", optional, tag = "50")]
    pub compressed_packets: Option<Vec<u8>>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(int32, optional, tag = "79")]
    pub trusted_pid: Option<i32>,
    #[prost(message, optional, boxed, tag = "12")]
    pub interned_data: Option<Box<InternedData>>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(bool, optional, tag = "41")]
    pub incremental_state_cleared: Option<bool>,
    #[prost(message, optional, boxed, tag = "59")]
    pub trace_packet_defaults: Option<Box<TracePacketDefaults>>,
    #[prost(bool, optional, tag = "42")]
    pub previous_packet_dropped: Option<bool>,
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
}

/// `TracePacket.sequence_flags` bits.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

#[derive(Clone, PartialEq, Message)]
pub struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackEventDefaults {
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(uint64, repeated, tag = "31")]
    pub extra_counter_track_uuids: Vec<u64>,
    #[prost(uint64, repeated, tag = "45")]
    pub extra_double_counter_track_uuids: Vec<u64>,
}

// ---- clocks ---------------------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
    #[prost(uint64, optional, tag = "4")]
    pub unit_multiplier_ns: Option<u64>,
}

// ---- track events ---------------------------------------------------------

/// `TrackEvent.Type`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;
pub const TYPE_INSTANT: i32 = 3;
pub const TYPE_COUNTER: i32 = 4;

#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    #[prost(uint64, repeated, tag = "3")]
    pub category_iids: Vec<u64>,
    #[prost(bytes = "vec", repeated, tag = "22")]
    pub categories: Vec<Vec<u8>>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "23")]
    pub name: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    #[prost(uint64, repeated, tag = "31")]
    pub extra_counter_track_uuids: Vec<u64>,
    #[prost(int64, repeated, tag = "12")]
    pub extra_counter_values: Vec<i64>,
    #[prost(uint64, repeated, tag = "45")]
    pub extra_double_counter_track_uuids: Vec<u64>,
    #[prost(double, repeated, tag = "46")]
    pub extra_double_counter_values: Vec<f64>,
    #[prost(uint64, repeated, tag = "36")]
    pub flow_ids_old: Vec<u64>,
    #[prost(fixed64, repeated, tag = "47")]
    pub flow_ids: Vec<u64>,
    #[prost(uint64, repeated, tag = "42")]
    pub terminating_flow_ids_old: Vec<u64>,
    #[prost(fixed64, repeated, tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
    #[prost(uint64, optional, tag = "52")]
    pub correlation_id: Option<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(message, optional, tag = "33")]
    pub source_location: Option<SourceLocation>,
    #[prost(uint64, optional, tag = "34")]
    pub source_location_iid: Option<u64>,
    #[prost(int64, optional, tag = "1")]
    pub timestamp_delta_us: Option<i64>,
    #[prost(int64, optional, tag = "16")]
    pub timestamp_absolute_us: Option<i64>,
    #[prost(message, optional, tag = "6")]
    pub legacy_event: Option<LegacyEvent>,
}

/// `TrackEvent.LegacyEvent`: a Chrome JSON-era phase on a track event
/// without a `type` (the fields read; ids, flows and thread time are not).
#[derive(Clone, PartialEq, Message)]
pub struct LegacyEvent {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// The phase character (`B`, `E`, `X`, `I`, `C`, …).
    #[prost(int32, optional, tag = "2")]
    pub phase: Option<i32>,
    #[prost(int64, optional, tag = "3")]
    pub duration_us: Option<i64>,
    #[prost(int32, optional, tag = "18")]
    pub pid_override: Option<i32>,
    #[prost(int32, optional, tag = "19")]
    pub tid_override: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "10")]
    pub name: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    #[prost(uint64, optional, tag = "7")]
    pub pointer_value: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub nested_value: Option<NestedValue>,
    #[prost(bytes = "vec", optional, tag = "9")]
    pub legacy_json_value: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "6")]
    pub string_value: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
    #[prost(message, repeated, tag = "11")]
    pub dict_entries: Vec<DebugAnnotation>,
    #[prost(message, repeated, tag = "12")]
    pub array_values: Vec<DebugAnnotation>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NestedValue {
    #[prost(int32, optional, tag = "1")]
    pub nested_type: Option<i32>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub dict_keys: Vec<Vec<u8>>,
    #[prost(message, repeated, tag = "3")]
    pub dict_values: Vec<NestedValue>,
    #[prost(message, repeated, tag = "4")]
    pub array_values: Vec<NestedValue>,
    #[prost(int64, optional, tag = "5")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "6")]
    pub double_value: Option<f64>,
    #[prost(bool, optional, tag = "7")]
    pub bool_value: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "8")]
    pub string_value: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SourceLocation {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub file_name: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub function_name: Option<Vec<u8>>,
    #[prost(uint32, optional, tag = "4")]
    pub line_number: Option<u32>,
}

// ---- descriptors ----------------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "10")]
    pub static_name: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "13")]
    pub atrace_name: Option<Vec<u8>>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub cmdline: Vec<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "6")]
    pub process_name: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub thread_name: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "6")]
    pub reference_timestamp_us: Option<i64>,
}

/// `CounterDescriptor.Unit`.
pub const UNIT_TIME_NS: i32 = 1;
pub const UNIT_COUNT: i32 = 2;
pub const UNIT_SIZE_BYTES: i32 = 3;

#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub r#type: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "6")]
    pub unit_name: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "4")]
    pub unit_multiplier: Option<i64>,
    #[prost(bool, optional, tag = "5")]
    pub is_incremental: Option<bool>,
}

// ---- interning ------------------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedName>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "4")]
    pub source_locations: Vec<SourceLocation>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
    #[prost(message, repeated, tag = "16")]
    pub build_ids: Vec<InternedString>,
    #[prost(message, repeated, tag = "17")]
    pub mapping_paths: Vec<InternedString>,
    #[prost(message, repeated, tag = "5")]
    pub function_names: Vec<InternedString>,
    #[prost(message, repeated, tag = "19")]
    pub mappings: Vec<Mapping>,
    #[prost(message, repeated, tag = "6")]
    pub frames: Vec<Frame>,
    #[prost(message, repeated, tag = "7")]
    pub callstacks: Vec<Callstack>,
    #[prost(message, repeated, tag = "26")]
    pub kernel_symbols: Vec<InternedString>,
}

/// `EventCategory`, `EventName` and `DebugAnnotationName` share this shape.
#[derive(Clone, PartialEq, Message)]
pub struct InternedName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub build_id: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub start: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub end: Option<u64>,
    #[prost(uint64, repeated, tag = "7")]
    pub path_string_ids: Vec<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Frame {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub function_name_id: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub mapping_id: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub rel_pc: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Callstack {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Bottom (outermost) frame first.
    #[prost(uint64, repeated, tag = "2")]
    pub frame_ids: Vec<u64>,
}

// ---- processes ------------------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct ProcessTree {
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<TreeProcess>,
    #[prost(message, repeated, tag = "2")]
    pub threads: Vec<TreeThread>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TreeProcess {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub ppid: Option<i32>,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub cmdline: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TreeThread {
    #[prost(int32, optional, tag = "1")]
    pub tid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ProcessStats {
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<StatsProcess>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StatsProcess {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(uint64, optional, tag = "2")]
    pub vm_size_kb: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub vm_rss_kb: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub rss_anon_kb: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub rss_file_kb: Option<u64>,
    #[prost(uint64, optional, tag = "6")]
    pub rss_shmem_kb: Option<u64>,
    #[prost(uint64, optional, tag = "7")]
    pub vm_swap_kb: Option<u64>,
    #[prost(uint64, optional, tag = "9")]
    pub vm_hwm_kb: Option<u64>,
}

// ---- ftrace ---------------------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct FtraceEventBundle {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
    #[prost(bool, optional, tag = "3")]
    pub lost_events: Option<bool>,
    #[prost(message, optional, tag = "4")]
    pub compact_sched: Option<CompactSched>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CompactSched {
    #[prost(bytes = "vec", repeated, tag = "5")]
    pub intern_table: Vec<Vec<u8>>,
    #[prost(uint64, repeated, tag = "1")]
    pub switch_timestamp: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub switch_prev_state: Vec<i64>,
    #[prost(int32, repeated, tag = "3")]
    pub switch_next_pid: Vec<i32>,
    #[prost(int32, repeated, tag = "4")]
    pub switch_next_prio: Vec<i32>,
    #[prost(uint32, repeated, tag = "6")]
    pub switch_next_comm_index: Vec<u32>,
    #[prost(uint64, repeated, tag = "7")]
    pub waking_timestamp: Vec<u64>,
    #[prost(int32, repeated, tag = "8")]
    pub waking_pid: Vec<i32>,
    #[prost(int32, repeated, tag = "9")]
    pub waking_target_cpu: Vec<i32>,
    #[prost(int32, repeated, tag = "10")]
    pub waking_prio: Vec<i32>,
    #[prost(uint32, repeated, tag = "11")]
    pub waking_comm_index: Vec<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(message, optional, tag = "3")]
    pub print: Option<PrintEvent>,
    #[prost(message, optional, tag = "4")]
    pub sched_switch: Option<SchedSwitch>,
    #[prost(message, optional, tag = "20")]
    pub sched_waking: Option<SchedWaking>,
    #[prost(message, optional, tag = "11")]
    pub cpu_frequency: Option<CpuState>,
    #[prost(message, optional, tag = "13")]
    pub cpu_idle: Option<CpuState>,
    #[prost(message, optional, tag = "24")]
    pub softirq_entry: Option<Softirq>,
    #[prost(message, optional, tag = "25")]
    pub softirq_exit: Option<Softirq>,
    #[prost(message, optional, tag = "36")]
    pub irq_handler_entry: Option<IrqHandlerEntry>,
    #[prost(message, optional, tag = "37")]
    pub irq_handler_exit: Option<IrqHandlerExit>,
}

/// `SoftirqEntryFtraceEvent` / `SoftirqExitFtraceEvent`: the softirq
/// vector (0 HI, 1 TIMER, 2 NET_TX, 3 NET_RX, 4 BLOCK, 5 IRQ_POLL,
/// 6 TASKLET, 7 SCHED, 8 HRTIMER, 9 RCU).
#[derive(Clone, PartialEq, Message)]
pub struct Softirq {
    #[prost(uint32, optional, tag = "1")]
    pub vec: Option<u32>,
}

/// `IrqHandlerEntryFtraceEvent`: a hard interrupt handler starts.
#[derive(Clone, PartialEq, Message)]
pub struct IrqHandlerEntry {
    #[prost(int32, optional, tag = "1")]
    pub irq: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
}

/// `IrqHandlerExitFtraceEvent`: it returns (`ret` 1 = handled).
#[derive(Clone, PartialEq, Message)]
pub struct IrqHandlerExit {
    #[prost(int32, optional, tag = "1")]
    pub irq: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub ret: Option<i32>,
}

/// `CpuFrequencyFtraceEvent` (state in kHz) and `CpuIdleFtraceEvent`
/// (state = idle level, `u32::MAX` = leaving idle) share this shape.
#[derive(Clone, PartialEq, Message)]
pub struct CpuState {
    #[prost(uint32, optional, tag = "1")]
    pub state: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub cpu_id: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PrintEvent {
    #[prost(bytes = "vec", optional, tag = "2")]
    pub buf: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedSwitch {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub prev_comm: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub next_comm: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchedWaking {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub comm: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

// ---- callstack samples ----------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct PerfSample {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub tid: Option<u32>,
    #[prost(int32, optional, tag = "5")]
    pub cpu_mode: Option<i32>,
    #[prost(uint64, optional, tag = "6")]
    pub timebase_count: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub callstack_iid: Option<u64>,
    #[prost(int32, optional, tag = "16")]
    pub unwind_error: Option<i32>,
    #[prost(uint64, optional, tag = "17")]
    pub kernel_records_lost: Option<u64>,
    #[prost(int32, optional, tag = "18")]
    pub sample_skipped_reason: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StreamingProfilePacket {
    #[prost(uint64, repeated, tag = "1")]
    pub callstack_iid: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub timestamp_delta_us: Vec<i64>,
}

// ---- GPU counters ---------------------------------------------------------

#[derive(Clone, PartialEq, Message)]
pub struct GpuCounterEvent {
    #[prost(message, optional, tag = "1")]
    pub counter_descriptor: Option<GpuCounterDescriptor>,
    #[prost(message, repeated, tag = "2")]
    pub counters: Vec<GpuCounter>,
    #[prost(int32, optional, tag = "3")]
    pub gpu_id: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GpuCounterDescriptor {
    #[prost(message, repeated, tag = "1")]
    pub specs: Vec<GpuCounterSpec>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GpuCounterSpec {
    #[prost(uint32, optional, tag = "1")]
    pub counter_id: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GpuCounter {
    #[prost(uint32, optional, tag = "1")]
    pub counter_id: Option<u32>,
    #[prost(int64, optional, tag = "2")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "3")]
    pub double_value: Option<f64>,
}

/// Names of the `TracePacket` data fields, for the coverage counts.
pub fn packet_field_name(field: u32) -> Option<&'static str> {
    Some(match field {
        1 => "ftrace_events",
        2 => "process_tree",
        6 => "clock_snapshot",
        9 => "process_stats",
        11 => "track_event",
        43 => "process_descriptor",
        44 => "thread_descriptor",
        50 => "compressed_packets",
        52 => "gpu_counter_event",
        54 => "streaming_profile_packet",
        60 => "track_descriptor",
        66 => "perf_sample",
        _ => return None,
    })
}

/// Packet data fields flameox knows but does not read (reported by name).
pub fn unread_field_name(field: u32) -> Option<&'static str> {
    Some(match field {
        5 => "chrome_events",
        7 => "sys_stats",
        33 => "trace_config",
        34 => "ftrace_stats",
        35 => "trace_stats",
        37 => "profile_packet",
        39 => "android_log",
        45 => "system_info",
        47 => "packages_list",
        53 => "gpu_render_stage_event",
        56 => "heap_graph",
        57 => "graphics_frame_event",
        67 => "cpu_info",
        69 => "service_event",
        76 => "frame_timeline_event",
        89 => "trace_uuid",
        _ => return None,
    })
}

/// Packet fields that are bookkeeping, not data (never reported as unknown).
pub fn is_packet_envelope_field(field: u32) -> bool {
    matches!(
        field,
        3 | 8 | 10 | 12 | 13 | 41 | 42 | 58 | 59 | 79 | 87 | 98 | 36
    )
}

/// Whether a `packets_by_type` key names a packet kind flameox reads.
pub fn packet_field_name_known(key: &str) -> bool {
    !(key.starts_with("not_read.") || key.starts_with("unknown.") || key == "ftrace_other_events")
}

/// `TracePacket.track_event`'s field number.
pub const TRACK_EVENT_FIELD: u32 = 11;
/// `TracePacket.perf_sample`'s field number.
pub const PERF_SAMPLE_FIELD: u32 = 66;
