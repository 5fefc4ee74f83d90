//! Sentinels shared by the trace-event columns: an absent integer, an
//! absent interned id or index, and a row without a parent. Kept apart so
//! every column type can name them without importing the store.

/// Sentinel for an absent optional integer.
pub const NONE: i64 = i64::MIN;
/// Sentinel for an absent interned string or index.
pub const NO_ID: u32 = u32::MAX;
/// Sentinel for a row without a parent (`parent_event_id`).
pub const NO_PARENT: u64 = u64::MAX;

pub fn opt(v: i64) -> Option<i64> {
    (v != NONE).then_some(v)
}

pub fn opt_id(v: u32) -> Option<u32> {
    (v != NO_ID).then_some(v)
}
