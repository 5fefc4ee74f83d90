//! Go execution traces (`runtime/trace`, `go test -trace`): go1.11–1.21
//! (per-P batches) and go1.22+ (generations), decoded into one timeline
//! model ([`model`]: goroutine states, P activity, GC, user tasks and
//! regions, heap counters) that [`extract`] writes as evidence.

mod convert_v1;
mod convert_v2;
#[cfg(test)]
mod corpus_tests;
pub mod decode;
pub mod error;
mod events_v1;
mod events_v2;
mod gc_and_user;
mod generations_v2;
pub mod header;
pub mod model;
mod order_v1;
#[cfg(test)]
mod pipeline_tests;
mod sched_event;
mod states;
#[cfg(test)]
mod synthetic;
mod transitions;

pub use decode::{decode_go_trace, decode_go_trace_into};
pub use error::{DecodeLimits, GoTraceError};
pub use header::{TraceFormat, TraceVersion, looks_like_go_trace, parse_header};
pub use model::*;
mod format;
pub use format::FORMAT;
mod cpu_samples;
mod evidence_sink;
pub mod extract;
#[cfg(test)]
mod extract_corpus_tests;
#[cfg(test)]
mod extract_tests;
mod placement;
mod tables;
mod task_lanes;
pub use extract::extract_go_trace;
