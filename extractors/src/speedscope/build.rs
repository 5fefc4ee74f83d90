//! Turning speedscope profiles into stacks: the shared frame table (made
//! lazily, with placeholders for bad indices), units, and sampled profiles.
//! Evented profiles are in `evented.rs`.

use crate::api::{ExtractError, ExtractObserver, LimitationLog};
use crate::folded::{NO_FRAMES, thread_element};
use crate::stacks::{MetricId, ReductionSpec, StackAggregator};

use super::model::{FrameDef, NO_NODE, Profile};
use super::{INVALID_FRAME, UNNAMED_FRAME};

const POLL_EVERY: usize = 64 * 1024;

/// A profile's `unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    /// A time unit: values × 10^pow are nanoseconds.
    Time(i32),
    Bytes,
    None,
    /// Missing or not in the schema: read like `none`, with a limitation.
    Unknown,
}

pub(super) fn unit_of(unit: Option<&str>) -> Unit {
    match unit {
        Some("seconds") => Unit::Time(9),
        Some("milliseconds") => Unit::Time(6),
        Some("microseconds") => Unit::Time(3),
        Some("nanoseconds") => Unit::Time(0),
        Some("bytes") => Unit::Bytes,
        Some("none") => Unit::None,
        _ => Unit::Unknown,
    }
}

pub(super) fn spec(metric: &str, unit: &str) -> ReductionSpec {
    ReductionSpec {
        metric: metric.into(),
        weight_unit: unit.into(),
        unit: unit.into(),
    }
}

/// What the profiles are turned into, shared across profiles.
pub(super) struct Builder<'f> {
    pub(super) agg: StackAggregator,
    pub(super) log: LimitationLog,
    pub(super) frames: &'f [FrameDef],
    /// Aggregator frame per `shared.frames` index, made on first use.
    pub(super) frame_ids: Vec<Option<u32>>,
    pub(super) samples: u64,
    pub(super) events: u64,
    pub(super) thread_ids: bool,
}

impl Builder<'_> {
    pub(super) fn frame(&mut self, index: i64) -> u32 {
        let slot = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.frames.len());
        let Some(i) = slot else {
            self.log.note("frame_index_out_of_range", || {
                format!(
                    "frame index {index} is outside shared.frames (length {}); kept as `{INVALID_FRAME}`",
                    self.frames.len()
                )
            });
            return self
                .agg
                .frame(INVALID_FRAME, None, None, None, "unknown", false);
        };
        if let Some(Some(id)) = self.frame_ids.get(i) {
            return *id;
        }
        let def = &self.frames[i];
        let name = match def.name.as_deref() {
            Some(n) => n,
            None => {
                self.log.note("frame_without_name", || {
                    format!("shared.frames[{i}] has no name; called `{UNNAMED_FRAME}`")
                });
                UNNAMED_FRAME
            }
        };
        let file = def.file.as_deref().filter(|f| !f.is_empty());
        let language = match file {
            Some(f) if f.ends_with(".py") || f.starts_with("<frozen ") => "python",
            _ => "unknown",
        };
        let id = self.agg.frame(name, file, def.line, None, language, true);
        self.frame_ids[i] = Some(id);
        id
    }

    /// py-spy roots every stack in a `thread (TID)` / `thread (TID): NAME`
    /// frame with no file (as in its folded output).
    fn is_thread_marker(&self, index: i64) -> bool {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.frames.get(i))
            .is_some_and(|f| {
                f.file.as_deref().unwrap_or("").is_empty()
                    && f.name.as_deref().and_then(thread_element).is_some()
            })
    }

    pub(super) fn sampled(
        &mut self,
        n: usize,
        profile: &Profile,
        thread: u32,
        observer: &dyn ExtractObserver,
    ) -> Result<(), ExtractError> {
        let Some(trie) = &profile.samples else {
            self.log.note("profile_without_samples", || {
                format!("sampled profile {n} has no `samples`; skipped")
            });
            return Ok(());
        };
        let unit = unit_of(profile.unit.as_deref());
        let weights = profile.weights.as_deref().unwrap_or(&[]);
        if weights.len() != trie.leaves.len() {
            self.log.note("weights_length_mismatch", || {
                format!(
                    "sampled profile {n} has {} samples but {} weights; samples without a weight count once under cpu.samples (bytes profiles: dropped)",
                    trie.leaves.len(),
                    weights.len()
                )
            });
        }
        // Stack per trie node (parents come first); `None` for py-spy's
        // thread marker at the root, which is the profile's thread, not a frame.
        let mut stack_of: Vec<Option<u32>> = Vec::with_capacity(trie.nodes.len());
        for &(parent, index) in &trie.nodes {
            if parent == NO_NODE && self.is_thread_marker(index) {
                stack_of.push(None);
                continue;
            }
            let frame = self.frame(index);
            let parent = stack_of.get(parent as usize).copied().flatten();
            stack_of.push(Some(self.agg.stack(parent, frame)));
        }
        let mut no_frames = None;
        let samples = self.agg.metric(spec("cpu.samples", "samples"));
        let valued: Option<MetricId> = match unit {
            Unit::Time(_) => Some(self.agg.metric(spec("cpu.time_ns", "ns"))),
            Unit::Bytes => Some(self.agg.metric(spec("memory.alloc_bytes", "bytes"))),
            Unit::None | Unit::Unknown => None,
        };
        if unit == Unit::Unknown {
            self.log.note("unknown_unit", || {
                format!(
                    "profile {n} has unit {:?}; weights are read as plain counts (`none`)",
                    profile.unit
                )
            });
        }
        for (i, &leaf) in trie.leaves.iter().enumerate() {
            if i % POLL_EVERY == POLL_EVERY - 1 && observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
            let stack = match stack_of.get(leaf as usize) {
                Some(Some(s)) => *s,
                // An empty stack, or only the thread marker.
                _ => *no_frames.get_or_insert_with(|| {
                    let f = self
                        .agg
                        .frame(NO_FRAMES, None, None, None, "unknown", false);
                    self.agg.stack(None, f)
                }),
            };
            self.samples += 1;
            let pow = match unit {
                Unit::Time(p) => p,
                _ => 0,
            };
            let weight = weights.get(i).map(|w| (w, w.scaled(pow)));
            let weight = match weight {
                None => None,
                Some((_, Some(v))) if v >= 0 => Some(v),
                Some((w, v)) => {
                    let code = if v.is_some() {
                        "negative_weight"
                    } else {
                        "invalid_weight"
                    };
                    self.log.note(code, || {
                        format!("profile {n} sample {i} has weight {w:?}; read as 0")
                    });
                    Some(0)
                }
            };
            match (valued, weight) {
                (Some(metric), Some(w)) => {
                    self.agg
                        .add_metric_sample(metric, stack, thread, None, w, 1);
                    if matches!(unit, Unit::Time(_)) {
                        self.agg
                            .add_metric_sample(samples, stack, thread, None, 1, 1);
                    }
                }
                (Some(_), None) if unit == Unit::Bytes => {}
                (None, Some(w)) => {
                    self.agg
                        .add_metric_sample(samples, stack, thread, None, w, w);
                }
                _ => self
                    .agg
                    .add_metric_sample(samples, stack, thread, None, 1, 1),
            }
        }
        Ok(())
    }
}
