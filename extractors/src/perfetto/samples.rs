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
use super::sequence::{MAX_PATH_PIECES, MAX_SLASH_MODULE_BYTES};

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
    ///
    /// Each frame reference costs a few lookups: frames resolve to the
    /// definitions they are made of ([`super::sequence::FrameKey`]), and the aggregator
    /// (which hashes a frame's text) sees each distinct one once per
    /// sequence state, however many references a callstack holds.
    fn callstack(&mut self, sequence_id: u32, iid: u64) -> u32 {
        let Decoder {
            sequences, agg, p, ..
        } = self;
        let seq = sequences.entry(sequence_id).or_default();
        if let Some(Some(stack)) = seq.stack_cache.get(&iid) {
            return *stack;
        }
        // Lent out of the sequence while its frames resolve.
        let Some(frame_ids) = seq.callstacks.get_mut(&iid).map(std::mem::take) else {
            p.log.note("interned_id_missing", || {
                "a sample's callstack was never interned on its sequence".to_string()
            });
            let frame = agg.frame(UNRESOLVED_STACK, None, None, None, "unknown", false);
            return agg.stack(None, frame);
        };
        let mut parent = None;
        let mut missing = 0u64;
        let mut truncated = 0u64;
        let mut unknown = None;
        for &f in &frame_ids {
            let id = match seq.frame_key(f) {
                Some((key, cut)) => {
                    truncated += u64::from(cut);
                    match seq.frame_ids.get(&key) {
                        Some(&id) => id,
                        None => {
                            let (function, module, symbolized) = seq.frame_text(&key);
                            let id = agg.frame(
                                &function,
                                None,
                                None,
                                module.as_deref(),
                                "native",
                                symbolized,
                            );
                            seq.frame_ids.insert(key, id);
                            id
                        }
                    }
                }
                None => {
                    missing += 1;
                    *unknown.get_or_insert_with(|| {
                        agg.frame("[unknown frame]", None, None, None, "unknown", false)
                    })
                }
            };
            parent = Some(agg.stack(parent, id));
        }
        if let Some(slot) = seq.callstacks.get_mut(&iid) {
            *slot = frame_ids;
        }
        if missing > 0 {
            p.log.note_n("interned_id_missing", missing, || {
                "a callstack names a frame its sequence never interned".to_string()
            });
        }
        if truncated > 0 {
            p.log.note_n("mapping_path_truncated", truncated, || {
                format!(
                    "a mapping's path has more than {MAX_PATH_PIECES} pieces, or is more than \
                     {MAX_SLASH_MODULE_BYTES} slashes; only the first pieces were read"
                )
            });
        }
        let stack = match parent {
            Some(s) => s,
            None => {
                let frame = agg.frame(UNRESOLVED_STACK, None, None, None, "unknown", false);
                agg.stack(None, frame)
            }
        };
        seq.stack_cache.insert(iid, Some(stack));
        stack
    }
}
