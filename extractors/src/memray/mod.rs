//! memray captures (`memray run`, lz4-compressed or not): the decoder
//! ([`reader`]: header, records, Python and native stacks) and the fold
//! into what `analyze_memory` shows ([`summary`]: peak heap and what was
//! live at it, allocations still live at the end, allocation sites). The
//! extractor writing evidence is [`extract`].

pub mod aggregated;
pub mod capture_report;
pub mod error;
pub mod events;
pub mod extract;
mod format;
pub mod header;
pub mod linetable;
pub mod mapped_ranges;
pub mod memory_counters;
pub mod reader;
pub mod records;
pub mod site_stacks;
pub mod site_tables;
pub mod source;
pub mod stacks;
pub mod summary;
#[cfg(test)]
mod test_capture;
pub mod wire;
pub use format::FORMAT;
