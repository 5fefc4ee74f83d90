//! Callstack samples: `perf_sample` (traced_perf, systing, simpleperf) and
//! Chrome's `streaming_profile_packet`, with frames, callstacks, mappings
//! and function names interned per sequence.
//!
//! A callstack resolves into the shared [`crate::stacks::StackAggregator`]
//! as soon as it is first used (its interned frames may be cleared later);
//! the sample itself waits until the end, when thread and process names
//! are known. Every sample weighs 1 under metric `cpu.samples` and keeps
//! its timestamp. A frame without a function name is `0x<rel_pc>` in its
//! mapping, unsymbolized.

use super::decoder::Decoder;
use super::proto::{PerfSample, StreamingProfilePacket};

/// The frame of a sample whose callstack could not be resolved.
pub const UNRESOLVED_STACK: &str = "[unresolved callstack]";

impl Decoder {
    pub fn perf_sample(&mut self, sequence_id: u32, ts: Option<i64>, s: &PerfSample) {
        let Some(iid) = s.callstack_iid else {
            // Lost records, skipped samples and producer events carry no stack.
            if s.sample_skipped_reason.is_some() {
                self.p.log.note("sample_skipped_by_producer", || {
                    "the profiler skipped a sample (its stack was not unwound)".to_string()
                });
            }
            if let Some(lost) = s.kernel_records_lost.filter(|&n| n > 0) {
                self.p.log.note_n("kernel_samples_lost", lost, || {
                    "the kernel dropped perf records before they were read".to_string()
                });
            }
            return;
        };
        let Some(ts) = ts else {
            self.p.log.note("event_without_timestamp", || {
                "a perf sample has no timestamp; skipped".to_string()
            });
            return;
        };
        if s.unwind_error.is_some_and(|e| e > 1) {
            self.p.log.note("partial_unwind", || {
                "a sample's stack unwinding stopped with an error; its stack is partial".to_string()
            });
        }
        let stack = self.callstack(sequence_id, iid);
        self.producer_hint.get_or_insert("perfetto.traced_perf");
        self.push_sample(
            ts,
            stack,
            i64::from(s.pid.unwrap_or(0)),
            i64::from(s.tid.unwrap_or(0)),
        );
    }

    pub fn streaming_profile(&mut self, sequence_id: u32, p: &StreamingProfilePacket) {
        let (pid, tid) = self
            .sequences
            .get(&sequence_id)
            .and_then(|s| s.thread)
            .unwrap_or((0, 0));
        for (i, &iid) in p.callstack_iid.iter().enumerate() {
            let delta = p.timestamp_delta_us.get(i).copied().unwrap_or(0);
            let seq = self.sequences.entry(sequence_id).or_default();
            let Some(us) = seq.profile_time_us.map(|t| t.saturating_add(delta)) else {
                self.p.log.note("event_without_timestamp", || {
                    "a streaming profile sample has no reference time; skipped".to_string()
                });
                continue;
            };
            seq.profile_time_us = Some(us);
            let stack = self.callstack(sequence_id, iid);
            self.producer_hint.get_or_insert("chrome.sampler");
            self.push_sample(
                us.saturating_mul(1000),
                stack,
                i64::from(pid),
                i64::from(tid),
            );
        }
    }

    /// The aggregator stack of an interned callstack (cached per sequence).
    fn callstack(&mut self, sequence_id: u32, iid: u64) -> u32 {
        let seq = self.sequences.entry(sequence_id).or_default();
        if let Some(Some(stack)) = seq.stack_cache.get(&iid) {
            return *stack;
        }
        let Some(frame_ids) = seq.callstacks.get(&iid).cloned() else {
            self.p.log.note("interned_id_missing", || {
                "a sample's callstack was never interned on its sequence".to_string()
            });
            let frame = self
                .agg
                .frame(UNRESOLVED_STACK, None, None, None, "unknown", false);
            return self.agg.stack(None, frame);
        };
        let resolved: Vec<_> = frame_ids.iter().map(|&f| seq.frame(f)).collect();
        let mut parent = None;
        let mut missing = 0u64;
        for frame in resolved {
            let id = match frame {
                Some(f) => {
                    let module = f.module.as_deref().map(basename);
                    match &f.function {
                        Some(name) => self.agg.frame(name, None, None, module, "native", true),
                        None => {
                            let pc = format!("0x{:x}", f.rel_pc.unwrap_or(0));
                            self.agg.frame(&pc, None, None, module, "native", false)
                        }
                    }
                }
                None => {
                    missing += 1;
                    self.agg
                        .frame("[unknown frame]", None, None, None, "unknown", false)
                }
            };
            parent = Some(self.agg.stack(parent, id));
        }
        if missing > 0 {
            self.p.log.note_n("interned_id_missing", missing, || {
                "a callstack names a frame its sequence never interned".to_string()
            });
        }
        let stack = match parent {
            Some(s) => s,
            None => {
                let frame = self
                    .agg
                    .frame(UNRESOLVED_STACK, None, None, None, "unknown", false);
                self.agg.stack(None, frame)
            }
        };
        if let Some(seq) = self.sequences.get_mut(&sequence_id) {
            seq.stack_cache.insert(iid, Some(stack));
        }
        stack
    }
}

/// The file name of a mapping path (`/system/lib64/libc.so` → `libc.so`).
fn basename(path: &str) -> &str {
    path.rsplit('/').find(|p| !p.is_empty()).unwrap_or(path)
}
