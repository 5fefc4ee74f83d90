//! Reduced stacks: the output of a `merged_stacks` reduction (one stack
//! profile of a whole run — every rank of a job — summed by frame
//! identity), stored as an artifact like any input so its bytes are kept,
//! content-addressed and re-extractable. The document names its metric and
//! units, its frames with their full identity (function, file, line,
//! module, category) and its provenance (`reduction`: kind, version, plan
//! digest, commit, input generations), which the summary keeps.
//!
//! `{"schema": "flameox.reduced_stacks/1", "reduction": {…}, "metric":
//! "trace.wall_ns", "weight_unit": "ns", "unit": "ns", "frames": [{…}],
//! "stacks": [{"frames": [0, 3], "weight": 12, "count": 2}]}`

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::json_doc::read_document;
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::{ReductionSpec, StackAggregator, ThreadInfo};

pub const REDUCED_STACKS_SCHEMA: &str = "flameox.reduced_stacks/1";
pub const REDUCED_STACKS_EXTRACTOR_NAME: &str = "reduced_stacks";
pub const REDUCED_STACKS_EXTRACTOR_VERSION: &str = "1";

pub static FORMAT: crate::format_descriptor::Format = crate::format_descriptor::Format {
    kind: FormatKind::ReducedStacks,
    aliases: &["merged_stacks"],
    description: "flameox reduced stacks JSON (the output of a merged_stacks reduction: one profile of a whole run, with its provenance)",
    sniff: Some(|head| {
        let scan = head.object()?;
        (scan.has("schema") && head.contains(b"\"flameox.reduced_stacks/"))
            .then(|| {
                crate::sniff::Sniffed::certain(
                    Some("flameox reduction"),
                    "JSON object whose `schema` is flameox.reduced_stacks",
                )
            })
            .flatten()
    }),
    reading: crate::format_descriptor::Reading::Stream(
        crate::format_descriptor::Extractor {
            name: REDUCED_STACKS_EXTRACTOR_NAME,
            version: REDUCED_STACKS_EXTRACTOR_VERSION,
        },
        extract_reduced_stacks,
    ),
    measurements: false,
};

/// One frame with its identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReducedFrame {
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// A trace slice's category (its frame identity includes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default = "unknown")]
    pub language: String,
}

fn unknown() -> String {
    "unknown".to_owned()
}

/// One stack, root first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReducedStack {
    pub frames: Vec<u32>,
    pub weight: i64,
    pub count: i64,
}

/// The document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReducedStacks {
    pub schema: String,
    /// Provenance, kept whole in the extraction summary.
    pub reduction: serde_json::Value,
    pub metric: String,
    pub weight_unit: String,
    pub unit: String,
    pub frames: Vec<ReducedFrame>,
    pub stacks: Vec<ReducedStack>,
}

/// Reads reduced stacks into the stack tables under their own metric.
pub fn extract_reduced_stacks<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (doc, input_bytes): (ReducedStacks, u64) =
        read_document(reader, observer, "reduced stacks")?;
    if doc.schema != REDUCED_STACKS_SCHEMA {
        return Err(ExtractError::Parse {
            message: format!(
                "reduced stacks of schema `{}`; this build reads `{REDUCED_STACKS_SCHEMA}`",
                doc.schema
            ),
            offset: Some(0),
        });
    }
    let mut agg = StackAggregator::new();
    agg.metric(ReductionSpec {
        metric: doc.metric.clone(),
        weight_unit: doc.weight_unit.clone(),
        unit: doc.unit.clone(),
    });
    let frame_ids: Vec<u32> = doc
        .frames
        .iter()
        .map(|f| match &f.category {
            Some(category) if f.file.is_none() && f.module.is_none() => {
                agg.slice_frame(&f.function, Some(category), &f.language)
            }
            _ => agg.frame(
                &f.function,
                f.file.as_deref(),
                f.line,
                f.module.as_deref(),
                &f.language,
                true,
            ),
        })
        .collect();
    let thread = agg.thread(ThreadInfo {
        thread_name: Some("all threads of the reduced scope".to_owned()),
        ..ThreadInfo::default()
    });
    let mut log = LimitationLog::default();
    let mut total: i64 = 0;
    for (n, stack) in doc.stacks.iter().enumerate() {
        let mut parent = None;
        let mut valid = !stack.frames.is_empty();
        for &f in &stack.frames {
            match frame_ids.get(f as usize) {
                Some(&frame) => parent = Some(agg.stack(parent, frame)),
                None => valid = false,
            }
        }
        match (valid, parent) {
            (true, Some(leaf)) => {
                agg.add_sample(leaf, thread, None, stack.weight, stack.count);
                total = total.saturating_add(stack.weight);
            }
            _ => log.note("malformed_stack", || {
                format!("stack #{n} is empty or names a frame outside `frames`; skipped")
            }),
        }
    }
    let mut metadata = BTreeMap::new();
    metadata.insert("reduction".to_owned(), doc.reduction.clone());
    metadata.insert("total_weight".to_owned(), serde_json::json!(total));
    finish_stack_profile(
        agg,
        options,
        sink,
        StackProfileEnd {
            extractor: REDUCED_STACKS_EXTRACTOR_NAME,
            extractor_version: REDUCED_STACKS_EXTRACTOR_VERSION,
            format: FormatKind::ReducedStacks,
            producer: options
                .producer
                .clone()
                .unwrap_or_else(|| "flameox reduction".to_owned()),
            time_span_ns: None,
            thread_identity: false,
            timestamps: false,
            symbolized_frames: true,
            more_coverage: Vec::new(),
            metadata,
            log,
            input_bytes,
            input_events: doc.stacks.len() as u64,
        },
    )
}
