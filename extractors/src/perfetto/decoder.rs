//! The state of one Perfetto decode and the per-packet dispatch.
//!
//! Events go into the shared trace-event store ([`crate::trace_events`], so nesting,
//! phases, emission and the slice reductions are shared), but with a
//! *slot* in the track column: Perfetto names tracks by uuid and may
//! describe a track after its first event, so slots are turned into real
//! tracks only when the input has been read (see `finish`).

use std::collections::BTreeMap;

use crate::FastHashMap;

use super::clocks::{ClockError, Clocks};
use super::counter_runs::CounterNaming;
use super::ftrace_records::FtraceRecords;
use super::pending_samples::{PendingSample, PendingSamples};
use super::proto::{self, TracePacket, TrackDescriptor};
use super::sequence::{Admission, Sequence, lossy};
use super::track_event_view::{EventFields, TrackEventView};
use super::wire::Value;
use crate::sorted_runs::TimeOrderedRuns;
use crate::stacks::StackAggregator;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::ids::NO_ID;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::store::NewEvent;

/// Where an event or counter sits until tracks are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotKey {
    /// A `TrackDescriptor` uuid (described or not).
    Uuid(u64),
    /// A thread known by `(pid, tid)`; pid 0 when unknown.
    Thread(i32, i32),
    /// One CPU's scheduling slices.
    Cpu(u32),
    /// One CPU's hard interrupt (`false`) or softirq (`true`) handlers.
    Interrupts(u32, bool),
    /// One thread's scheduling states.
    ThreadState(i32),
    /// A named counter of a process (pid 0 = system-wide).
    Counter(i32, u32),
    /// An atrace async track of a process, by name.
    Async(i32, u32),
}

/// Reads an envelope field of a packet into `packet` as prost would;
/// `false` for any other field (or a wire type prost would refuse), which
/// sends the packet to prost.
fn envelope_field(packet: &mut TracePacket, field: u32, value: Value<'_>) -> bool {
    let Value::Varint(v) = value else {
        return false;
    };
    match field {
        8 => packet.timestamp = Some(v),
        58 => packet.timestamp_clock_id = Some(v as u32),
        10 => packet.trusted_packet_sequence_id = Some(v as u32),
        79 => packet.trusted_pid = Some(v as i32),
        13 => packet.sequence_flags = Some(v as u32),
        41 => packet.incremental_state_cleared = Some(v != 0),
        42 => packet.previous_packet_dropped = Some(v != 0),
        87 => packet.first_packet_on_sequence = Some(v != 0),
        _ => return false,
    }
    true
}

/// Largest ratio of inflated to compressed bytes over a trace's
/// `compressed_packets` (the same as the gzip input limit's default).
const INFLATE_RATIO: u64 = 500;
/// Inflated bytes always allowed, whatever the ratio.
const INFLATE_FLOOR: u64 = 256 << 20;

/// How many bytes the `compressed_packets` seen so far may inflate to in
/// all: work stays proportional to the input, whatever its blocks claim.
fn inflate_budget(compressed: u64) -> u64 {
    INFLATE_FLOOR.max(compressed.saturating_mul(INFLATE_RATIO))
}

/// The state of one Perfetto decode: sequences, clocks, tracks, pending
/// samples and the rows they become.
pub struct Decoder {
    pub p: TraceBuilder,
    pub sequences: FastHashMap<u32, Sequence>,
    pub clocks: Clocks,
    pub slots: Vec<SlotKey>,
    slot_of: FastHashMap<SlotKey, u32>,
    pub descriptors: FastHashMap<u64, TrackDescriptor>,
    /// Counter tracks that saw counter values (uuid → slot).
    pub counter_uuids: FastHashMap<u64, u32>,
    /// Incremental counter tracks: last accumulated value.
    pub counter_totals: FastHashMap<u64, f64>,
    /// Open track-event slices per slot (store rows).
    pub open: FastHashMap<u32, Vec<usize>>,
    pub process_names: FastHashMap<i32, String>,
    /// tid → (pid, name).
    pub threads: FastHashMap<i32, (Option<i32>, Option<String>)>,
    pub ftrace: FtraceRecords,
    pub agg: StackAggregator,
    pub samples: PendingSamples,
    /// The `(pid, tid)` each sample names (0 when unknown), by index.
    pub sample_threads: Vec<(i64, i64)>,
    sample_thread_index: FastHashMap<(i64, i64), u32>,
    /// Callstack samples were seen (set when tables are written).
    pub sampled: bool,
    pub gpu_counter_names: FastHashMap<u32, String>,
    /// Packets per top-level data field number (named in the summary).
    field_counts: FieldCounts,
    /// The last packet's sample, cleared and decoded into again: a box and
    /// its lists per packet were a tenth of the decode.
    spare_sample: Option<Box<proto::PerfSample>>,
    /// Track events' fields, reused from event to event (boxed: taken out
    /// and put back per event, it moves as a pointer).
    event_fields: Option<Box<EventFields>>,
    /// Track events' `args_json` buffers, reused.
    pub(super) args_scratch: super::annotations::ArgsScratch,
    /// Classifications of long event names by (name, category, instant)
    /// string ids (see `track_event`).
    pub(super) class_cache: FastHashMap<(u32, u32, bool), crate::trace_events::kinds::Classified>,
    /// GPU counter labels (`gpu<gpu>.<name>`) by counter id and gpu, as
    /// string ids: a counter's name is not copied and hashed per value.
    gpu_counter_labels: FastHashMap<u32, FastHashMap<i32, u32>>,
    /// ftrace events of kinds flameox does not read.
    pub ftrace_other_events: u64,
    pub packets: u64,
    pub compressed_packets: u64,
    /// Compressed and inflated bytes of `compressed_packets` so far: the
    /// inflated total may not pass [`inflate_budget`] of the compressed one.
    compressed_bytes: u64,
    inflated_bytes: u64,
    /// Inside a `compressed_packets` block (a nested one is refused).
    inflating: bool,
    pub max_args_bytes: usize,
    next_event_id: u64,
    pub producer_hint: Option<&'static str>,
    /// Bit `kind as u8` set once an event of that kind was added (the
    /// events themselves may have left for spill runs).
    pub kinds_seen: u32,
    /// Counter rows past the budget (with a spill folder).
    pub counter_runs: Option<TimeOrderedRuns<crate::trace_events::store::CounterRow>>,
    /// How `resolve_tracks` named counter rows, for the spilled ones.
    pub counter_naming: Option<CounterNaming>,
    /// Earliest and latest counter value (spilled ones included).
    pub counter_span: Option<(i64, i64)>,
}

impl Decoder {
    pub fn new(max_args_bytes: usize, spill_dir: Option<std::path::PathBuf>) -> Self {
        let mut p = TraceBuilder::default();
        p.store.arena = crate::trace_events::args_arena::ArgsArena::new(spill_dir);
        Decoder {
            p,
            sequences: FastHashMap::default(),
            clocks: Clocks::default(),
            slots: Vec::new(),
            slot_of: FastHashMap::default(),
            descriptors: FastHashMap::default(),
            counter_uuids: FastHashMap::default(),
            counter_totals: FastHashMap::default(),
            open: FastHashMap::default(),
            process_names: FastHashMap::default(),
            threads: FastHashMap::default(),
            ftrace: FtraceRecords::default(),
            agg: StackAggregator::new(),
            samples: PendingSamples::default(),
            sample_threads: Vec::new(),
            sample_thread_index: FastHashMap::default(),
            sampled: false,
            gpu_counter_names: FastHashMap::default(),
            field_counts: FieldCounts::default(),
            spare_sample: None,
            event_fields: Some(Box::default()),
            args_scratch: Default::default(),
            class_cache: FastHashMap::default(),
            gpu_counter_labels: FastHashMap::default(),
            ftrace_other_events: 0,
            packets: 0,
            compressed_packets: 0,
            compressed_bytes: 0,
            inflated_bytes: 0,
            inflating: false,
            max_args_bytes,
            next_event_id: 0,
            producer_hint: None,
            kinds_seen: 0,
            counter_runs: None,
            counter_naming: None,
            counter_span: None,
        }
    }

    /// Packets per data field, named: read kinds by name, known unread kinds
    /// as `not_read.<name>`, others as `unknown.<field>`.
    pub fn packet_counts(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (f, n) in self.field_counts.iter() {
            let name = match (proto::packet_field_name(f), proto::unread_field_name(f)) {
                (Some(name), _) => name.to_string(),
                (None, Some(name)) => format!("not_read.{name}"),
                (None, None) => format!("unknown.{f}"),
            };
            *out.entry(name).or_insert(0) += n;
        }
        if self.ftrace_other_events > 0 {
            out.insert("ftrace_other_events".to_string(), self.ftrace_other_events);
        }
        out
    }

    /// Keeps a callstack sample of `(pid, tid)` until thread names are known.
    pub fn push_sample(&mut self, ts: i64, stack: u32, pid: i64, tid: i64) {
        let thread = match self.sample_thread_index.get(&(pid, tid)) {
            Some(&index) => index,
            None => {
                let index = self.sample_threads.len() as u32;
                self.sample_threads.push((pid, tid));
                self.sample_thread_index.insert((pid, tid), index);
                index
            }
        };
        self.samples.push(PendingSample { ts, stack, thread });
    }

    pub fn slot(&mut self, key: SlotKey) -> u32 {
        if let Some(&s) = self.slot_of.get(&key) {
            return s;
        }
        let s = self.slots.len() as u32;
        self.slots.push(key);
        self.slot_of.insert(key, s);
        s
    }

    /// Adds an event row on `slot`; returns its store index.
    pub fn push_event(&mut self, event: EventRow<'_>) -> usize {
        let event_id = self.next_event_id;
        self.next_event_id += 1;
        self.kinds_seen |= 1 << (event.kind as u8);
        let args = event.args.map(|a| {
            crate::trace_events::args_arena::bound_args(
                a,
                self.max_args_bytes,
                crate::api::ARGS_TRUNCATED_MARKER,
            )
        });
        self.p.store.push(
            NewEvent {
                event_id,
                ts: event.ts,
                dur: event.dur,
                name: event.name,
                cat: event.category,
                kind: event.kind,
                track: event.slot,
                device_activity: false,
                fields: DeviceFields {
                    correlation: event.correlation,
                    ..DeviceFields::ABSENT
                },
            },
            event.instant,
            args.as_deref(),
        )
    }

    /// Notes a process name (descriptor, process tree).
    pub fn name_process(&mut self, pid: i32, name: String) {
        if !name.is_empty() {
            self.process_names.insert(pid, name);
        }
    }

    /// Notes a thread's process and name; later facts fill gaps only for
    /// the pid and replace the name.
    pub fn name_thread(&mut self, tid: i32, pid: Option<i32>, name: Option<String>) {
        let entry = self.threads.entry(tid).or_insert((None, None));
        if pid.is_some() {
            entry.0 = pid;
        }
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            entry.1 = Some(n);
        }
    }

    /// The packet's timestamp in the trace clock; `Ok(None)` when it has
    /// none, `Err` when its clock cannot be converted (counted).
    pub fn packet_time(
        &mut self,
        packet: &TracePacket,
        sequence: u32,
    ) -> Result<Option<i64>, ClockError> {
        let Some(raw) = packet.timestamp else {
            return Ok(None);
        };
        let default_clock = self
            .sequences
            .get(&sequence)
            .and_then(|s| s.defaults.as_ref())
            .and_then(|d| d.timestamp_clock_id);
        let clock = packet
            .timestamp_clock_id
            .or(default_clock)
            .unwrap_or_else(|| self.clocks.trace_clock());
        let absolute = self.clocks.absolute(sequence, clock, raw);
        match self.clocks.to_trace(sequence, clock, absolute) {
            Ok(ts) => Ok(Some(ts)),
            Err(ClockError::NoPath(id)) => {
                self.p.log.note("clock_unconvertible", || {
                    format!(
                        "a packet stamped in clock {id} has no clock snapshot relating it to the \
                         trace clock; skipped"
                    )
                });
                Err(ClockError::NoPath(id))
            }
        }
    }

    /// Decodes and dispatches one packet's bytes (recursing into compressed
    /// packets).
    ///
    /// One pass over the packet's fields counts its data fields, reads the
    /// envelope and finds the track event. A packet holding only those (most
    /// of a trace) needs no prost message: its track event is read in place
    /// ([`TrackEventView`]). Other packets are decoded by prost as well.
    pub fn packet(&mut self, bytes: &[u8]) {
        self.packets += 1;
        // A packet has one data field (its oneof); count each once.
        let mut seen = [0u32; 4];
        let mut n_seen = 0;
        let mut packet = TracePacket::default();
        let mut fast = true;
        let mut well_formed = true;
        let mut event: Option<&[u8]> = None;
        // A track event given in several pieces, joined (protobuf merges them).
        let mut joined: Option<Vec<u8>> = None;
        for field in super::wire::Fields::new(bytes) {
            let Ok((f, value)) = field else {
                well_formed = false;
                break;
            };
            if !(proto::is_packet_envelope_field(f) || seen[..n_seen].contains(&f)) {
                if n_seen < seen.len() {
                    seen[n_seen] = f;
                    n_seen += 1;
                }
                self.field_counts.add(f);
            }
            if f == proto::TRACK_EVENT_FIELD
                && let Ok(part) = value.bytes()
            {
                match (&mut joined, event) {
                    (Some(all), _) => all.extend_from_slice(part),
                    (None, Some(first)) => joined = Some([first, part].concat()),
                    (None, None) => event = Some(part),
                }
                continue;
            }
            fast &= envelope_field(&mut packet, f, value);
        }
        if !well_formed {
            self.p.log.note("malformed_packet", || {
                "a packet's fields are not well-formed protobuf; skipped".to_string()
            });
            return;
        }
        if !fast {
            packet = TracePacket::default();
            if seen[..n_seen].contains(&proto::PERF_SAMPLE_FIELD) {
                packet.perf_sample = self.spare_sample.take().map(|mut e| {
                    prost::Message::clear(&mut *e);
                    e
                });
            }
            // Merging into cleared messages is decoding them afresh.
            if let Err(e) = prost::Message::merge(&mut packet, bytes) {
                self.p.log.note("malformed_packet", || {
                    format!("a packet could not be decoded ({e}); skipped")
                });
                return;
            }
        }
        match joined.as_deref().or(event) {
            Some(event_bytes) => {
                // Empty only inside a packet's compressed packets.
                let mut fields = self.event_fields.take().unwrap_or_default();
                match TrackEventView::decode(event_bytes, &mut fields) {
                    Ok(view) => self.dispatch(&packet, Some(view)),
                    Err(_) => self.p.log.note("malformed_packet", || {
                        "a packet's track event is not well-formed protobuf; skipped".to_string()
                    }),
                }
                self.event_fields = Some(fields);
            }
            None => self.dispatch(&packet, None),
        }
        if packet.perf_sample.is_some() {
            self.spare_sample = packet.perf_sample;
        }
    }

    /// Applies one decoded packet.
    fn dispatch(&mut self, packet: &TracePacket, event: Option<TrackEventView<'_>>) {
        if let Some(compressed) = &packet.compressed_packets {
            self.compressed(compressed);
            return;
        }
        let sequence_id = packet.trusted_packet_sequence_id.unwrap_or(0);
        let admission = self.sequences.entry(sequence_id).or_default().admit(packet);
        if admission == Admission::SkipNeedsState {
            self.p.log.note("incremental_state_missing", || {
                "a packet needs interned state that its sequence never sent (or lost); skipped"
                    .to_string()
            });
            return;
        }
        if let Some(snapshot) = &packet.clock_snapshot {
            self.clocks.add_snapshot(sequence_id, snapshot);
        }
        if let Some(tree) = &packet.process_tree {
            self.process_tree(tree);
        }
        if let Some(d) = &packet.process_descriptor
            && let Some(pid) = d.pid
        {
            let name = d
                .process_name
                .as_deref()
                .map(lossy)
                .or_else(|| d.cmdline.first().map(|c| lossy(c)));
            self.name_process(pid, name.unwrap_or_default());
        }
        if let Some(d) = &packet.thread_descriptor {
            self.legacy_thread_descriptor(sequence_id, d);
        }
        if let Some(d) = &packet.track_descriptor {
            self.track_descriptor(d);
        }
        let needs_time = event.is_some()
            || packet.ftrace_events.is_some()
            || packet.process_stats.is_some()
            || packet.perf_sample.is_some()
            || packet.gpu_counter_event.is_some();
        let ts = if needs_time {
            match self.packet_time(packet, sequence_id) {
                Ok(ts) => ts,
                Err(_) => return,
            }
        } else {
            None
        };
        if let Some(event) = event {
            self.track_event(sequence_id, ts, &event);
        }
        if let Some(bundle) = &packet.ftrace_events {
            self.ftrace_bundle(bundle);
        }
        if let (Some(stats), Some(ts)) = (&packet.process_stats, ts) {
            self.process_stats(ts, stats);
        }
        if let Some(sample) = &packet.perf_sample {
            self.perf_sample(sequence_id, ts, sample);
        }
        if let Some(profile) = &packet.streaming_profile_packet {
            self.streaming_profile(sequence_id, profile);
        }
        if let (Some(gpu), Some(ts)) = (&packet.gpu_counter_event, ts) {
            self.gpu_counters(ts, gpu);
        }
    }

    fn compressed(&mut self, bytes: &[u8]) {
        use std::io::Read;
        self.compressed_packets += 1;
        if self.inflating {
            // Perfetto never nests them; following a chain of nested blocks
            // would recurse once per level (a stack overflow) and hold every
            // level's inflated bytes at once.
            self.p.log.note("malformed_packet", || {
                "compressed packets inside compressed packets; skipped".to_string()
            });
            return;
        }
        self.compressed_bytes += bytes.len() as u64;
        let budget = inflate_budget(self.compressed_bytes).saturating_sub(self.inflated_bytes);
        let limit = budget.min(super::reader::MAX_PACKET_BYTES);
        let mut inflated = Vec::new();
        let read = flate2::read::ZlibDecoder::new(bytes)
            .take(limit + 1)
            .read_to_end(&mut inflated);
        if let Err(e) = read {
            self.p.log.note("malformed_packet", || {
                format!("compressed packets could not be inflated ({e}); skipped")
            });
            return;
        }
        if inflated.len() as u64 > limit {
            self.p.log.note("compressed_packets_too_large", || {
                format!(
                    "a compressed_packets block inflates past {limit} bytes (more than \
                     {INFLATE_RATIO}x the compressed bytes of the trace, or one packet's \
                     limit); skipped"
                )
            });
            return;
        }
        self.inflated_bytes += inflated.len() as u64;
        self.inflating = true;
        let mut reader = super::reader::PacketReader::new(inflated.as_slice());
        loop {
            match reader.next_packet() {
                Ok(super::reader::Next::Packet) => {
                    let inner = std::mem::take(&mut reader.packet);
                    self.packet(&inner);
                    reader.packet = inner;
                }
                Ok(super::reader::Next::End) => break,
                Ok(_) | Err(_) => {
                    self.p.log.note("malformed_packet", || {
                        "compressed packets end inside a packet; the rest was skipped".to_string()
                    });
                    break;
                }
            }
        }
        self.inflating = false;
    }

    fn process_tree(&mut self, tree: &proto::ProcessTree) {
        for process in &tree.processes {
            if let Some(pid) = process.pid {
                let name = process
                    .cmdline
                    .first()
                    .map(|c| lossy(c))
                    .unwrap_or_default();
                self.name_process(pid, name);
            }
        }
        for thread in &tree.threads {
            if let Some(tid) = thread.tid {
                self.name_thread(tid, thread.tgid, thread.name.as_deref().map(lossy));
            }
        }
    }

    fn legacy_thread_descriptor(&mut self, sequence: u32, d: &proto::ThreadDescriptor) {
        if let (Some(pid), Some(tid)) = (d.pid, d.tid) {
            self.name_thread(tid, Some(pid), d.thread_name.as_deref().map(lossy));
            let seq = self.sequences.entry(sequence).or_default();
            seq.thread = Some((pid, tid));
            if let Some(reference) = d.reference_timestamp_us {
                seq.legacy_time_us = Some(reference);
                seq.profile_time_us = Some(reference);
            }
        }
    }

    fn track_descriptor(&mut self, d: &TrackDescriptor) {
        let Some(uuid) = d.uuid else {
            self.p.log.note("track_without_uuid", || {
                "a track descriptor has no uuid; ignored".to_string()
            });
            return;
        };
        if let Some(process) = &d.process
            && let Some(pid) = process.pid
        {
            let name = process
                .process_name
                .as_deref()
                .map(lossy)
                .or_else(|| process.cmdline.first().map(|c| lossy(c)));
            self.name_process(pid, name.unwrap_or_default());
        }
        if let Some(thread) = &d.thread
            && let Some(tid) = thread.tid
        {
            self.name_thread(tid, thread.pid, thread.thread_name.as_deref().map(lossy));
        }
        self.descriptors.insert(uuid, d.clone());
    }

    fn process_stats(&mut self, ts: i64, stats: &proto::ProcessStats) {
        for process in &stats.processes {
            let Some(pid) = process.pid else { continue };
            for (name, kb) in [
                ("mem.rss", process.vm_rss_kb),
                ("mem.rss.anon", process.rss_anon_kb),
                ("mem.rss.file", process.rss_file_kb),
                ("mem.rss.shmem", process.rss_shmem_kb),
                ("mem.rss.watermark", process.vm_hwm_kb),
                ("mem.swap", process.vm_swap_kb),
                ("mem.virt", process.vm_size_kb),
            ] {
                let Some(kb) = kb else { continue };
                self.named_counter(pid, name, ts, kb as f64 * 1024.0, Some("bytes"));
            }
        }
    }

    fn gpu_counters(&mut self, ts: i64, event: &proto::GpuCounterEvent) {
        if let Some(d) = &event.counter_descriptor {
            for spec in &d.specs {
                if let (Some(id), Some(name)) = (spec.counter_id, &spec.name) {
                    self.gpu_counter_names.insert(id, lossy(name));
                    self.gpu_counter_labels.remove(&id);
                }
            }
        }
        for c in &event.counters {
            let Some(id) = c.counter_id else { continue };
            let value = match (c.int_value, c.double_value) {
                (Some(i), _) => i as f64,
                (None, Some(d)) => d,
                _ => continue,
            };
            let gpu = event.gpu_id.unwrap_or(0);
            let known = self.gpu_counter_labels.get(&id).and_then(|g| g.get(&gpu));
            let label = match known {
                Some(&label) => label,
                None => {
                    let label = match self.gpu_counter_names.get(&id) {
                        Some(name) => format!("gpu{gpu}.{name}"),
                        None => format!("gpu{gpu}.gpu counter {id}"),
                    };
                    let label = self.p.strings.intern(&label);
                    self.gpu_counter_labels
                        .entry(id)
                        .or_default()
                        .insert(gpu, label);
                    label
                }
            };
            let slot = self.slot(SlotKey::Counter(0, label));
            self.counter_row(slot, label, ts, value, None);
        }
    }

    /// Adds a value to the counter `name` of process `pid` (0 = system).
    pub fn named_counter(&mut self, pid: i32, name: &str, ts: i64, value: f64, unit: Option<&str>) {
        let name_id = self.p.strings.intern(name);
        let slot = self.slot(SlotKey::Counter(pid, name_id));
        self.counter_row(slot, name_id, ts, value, unit);
    }

    /// Adds a counter row on `slot`; `name` may be `NO_ID` (the track's
    /// name is filled in when tracks are resolved).
    pub fn counter_row(&mut self, slot: u32, name: u32, ts: i64, value: f64, unit: Option<&str>) {
        let unit = unit.map_or(NO_ID, |u| self.p.strings.intern(u));
        self.p
            .counters
            .push(crate::trace_events::store::CounterRow {
                track: slot,
                ts,
                value,
                name,
                unit,
            });
        self.counter_span = Some(match self.counter_span {
            None => (ts, ts),
            Some((a, b)) => (a.min(ts), b.max(ts)),
        });
        if let Some(runs) = &mut self.counter_runs
            && runs.full(self.p.counters.len())
        {
            runs.write(&mut self.p.counters);
        }
    }
}

/// One event row to add.
pub struct EventRow<'a> {
    pub slot: u32,
    pub ts: i64,
    pub dur: i64,
    /// Interned in the processor's strings.
    pub name: u32,
    /// Interned, or `NO_ID`.
    pub category: u32,
    pub kind: EventKind,
    pub instant: bool,
    pub correlation: i64,
    pub args: Option<&'a str>,
}

/// Packets per top-level field number: an array for the numbers Perfetto
/// uses, a map for the rest (a hash per packet showed in profiles).
struct FieldCounts {
    low: [u64; 128],
    high: FastHashMap<u32, u64>,
}

impl Default for FieldCounts {
    fn default() -> Self {
        FieldCounts {
            low: [0; 128],
            high: FastHashMap::default(),
        }
    }
}

impl FieldCounts {
    fn add(&mut self, field: u32) {
        match self.low.get_mut(field as usize) {
            Some(n) => *n += 1,
            None => *self.high.entry(field).or_insert(0) += 1,
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let low = (0u32..)
            .zip(self.low.iter().copied())
            .filter(|&(_, n)| n > 0);
        low.chain(self.high.iter().map(|(&f, &n)| (f, n)))
    }
}
