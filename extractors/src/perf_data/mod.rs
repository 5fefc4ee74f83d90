//! Linux `perf record` files (perf.data, file and pipe mode): the decoder
//! ([`session::read_perf_data`]: attrs, features, records in time order,
//! callchains resolved through the recorded mappings, tracepoints through
//! the file's own formats) and the extractor ([`extract`]) that writes
//! samples as stacks and scheduling tracepoints as the shared kernel-event
//! evidence.

pub mod address_space;
pub mod attrs;
pub mod bytes;
pub mod error;
pub mod extract;
pub mod features;
pub mod file_layout;
mod format;
pub mod frames;
pub mod header;
pub mod kernel_symbols;
pub mod model;
pub mod record_stream;
pub mod recording_facts;
pub mod records;
pub mod reorder;
pub mod replay;
pub mod sample;
pub mod sample_stacks;
pub mod session;
pub mod symbols;
pub mod tracepoints;
pub use format::FORMAT;
