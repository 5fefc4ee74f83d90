//! Fusion candidates: per artifact, the kernel sequences that repeat most
//! among short kernels launched back to back on one stream
//! ([`super::sequences`]); fusing one (torch.compile, a hand-written
//! kernel, a CUDA graph) saves `length − 1` launches per occurrence and the
//! gaps between them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::device_rows::{WorkClass, WorkRows};
use super::params::DiagnosisParams;
use super::sequences::{Kernel, SequenceLimits, frequent_sequences};
use crate::kernel_family::readable_name;

/// One repeated sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub kernels: Vec<String>,
    pub occurrences: usize,
    /// occurrences × (kernels − 1).
    pub launches_saved: usize,
    /// Σ kernel time inside the occurrences; Σ gaps between their kernels.
    pub kernel_ns: i64,
    pub gap_ns: i64,
    pub first_ts_ns: i64,
}

/// The candidates of one artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactFusion {
    pub rank: Option<i64>,
    pub artifact_id: String,
    /// Kernels read, and those shorter than `short_kernel_ns`.
    pub kernels: usize,
    pub short_kernels: usize,
    pub short_kernel_ns: i64,
    /// The next short kernel starts less than this after the previous end.
    pub max_gap_ns: i64,
    /// Counts may be low: kernels or n-grams past the bounds were not counted.
    pub truncated: bool,
    pub candidates: Vec<Candidate>,
}

/// (device, stream).
type StreamKey = (Option<i64>, Option<i64>);

pub fn fusion(work: &WorkRows, params: &DiagnosisParams) -> Vec<ArtifactFusion> {
    let mut streams: BTreeMap<u32, BTreeMap<StreamKey, Vec<Kernel>>> = BTreeMap::new();
    for r in work.rows.iter().filter(|r| r.class == WorkClass::Compute) {
        streams
            .entry(r.artifact)
            .or_default()
            .entry((r.device, r.stream))
            .or_default()
            .push(Kernel {
                name: r.name,
                ts: r.ts,
                end: r.end,
            });
    }
    let limits = SequenceLimits {
        top: params.limit.max(1),
        ..SequenceLimits::default()
    };
    let mut out = Vec::new();
    for (artifact, mut by_stream) in streams {
        for kernels in by_stream.values_mut() {
            kernels.sort_by_key(|k| (k.ts, k.end, k.name));
        }
        let lists: Vec<&[Kernel]> = by_stream.values().map(Vec::as_slice).collect();
        let found = frequent_sequences(&lists, &limits);
        let name = work.strings.get(artifact);
        out.push(ArtifactFusion {
            rank: params.rank(name),
            artifact_id: name.to_owned(),
            kernels: found.kernels_scanned,
            short_kernels: found.short_kernels,
            short_kernel_ns: limits.short_ns,
            max_gap_ns: limits.max_gap_ns,
            truncated: found.truncated,
            candidates: found
                .found
                .iter()
                .map(|s| Candidate {
                    kernels: s
                        .names
                        .iter()
                        .map(|n| readable_name(work.strings.get(*n)))
                        .collect(),
                    occurrences: s.occurrences,
                    launches_saved: s.launches_saved(),
                    kernel_ns: s.kernel_ns,
                    gap_ns: s.gap_ns,
                    first_ts_ns: s.first_ts,
                })
                .collect(),
        });
    }
    // The artifacts with most to save first; at most 2 (ranks repeat).
    out.sort_by(|a, b| {
        let saved = |f: &ArtifactFusion| f.candidates.first().map_or(0, |c| c.launches_saved);
        saved(b)
            .cmp(&saved(a))
            .then(a.artifact_id.cmp(&b.artifact_id))
    });
    out.truncate(2);
    out
}
