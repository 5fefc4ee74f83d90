//! The trace-event model shared by the timeline formats (Chrome JSON,
//! Perfetto, Nsight): what a format's reader fills ([`builder`]), how the
//! events are held ([`store`], [`tracks`], [`interner`]), nested and
//! labelled ([`nesting`]), spilled and merged when they exceed memory
//! ([`external`]), and written as `trace_events`, `tracks` and `counters`
//! ([`emit`]). A format folder only reads its input into a
//! [`builder::TraceBuilder`]; everything after that lives here.

pub mod args_arena;
pub mod builder;
pub mod device_columns;
pub mod emit;
pub mod emitter;
pub mod event_batch;
pub mod exclusive;
pub mod external;
mod flow_records;
pub mod ids;
pub mod in_memory;
pub mod interner;
pub mod kinds;
pub mod nesting;
pub mod record;
mod run_writer;
pub mod runs;
pub mod spill_phases;
pub mod store;
pub mod tracks;
