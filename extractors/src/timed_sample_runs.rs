//! The byte form of a timed sample in spill runs
//! ([`crate::timed_samples::TimedSamples::spill_to`]): 30 bytes, merged
//! back by [`crate::sorted_runs`] in the `samples` table's order.

use crate::sorted_runs::RunRecord;
use crate::timed_samples::{SampleOrder, TimedSample};

impl RunRecord for TimedSample {
    type Key = SampleOrder;

    fn key(&self) -> SampleOrder {
        self.order()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.weight.to_le_bytes());
        out.extend_from_slice(&self.stack.to_le_bytes());
        out.extend_from_slice(&self.thread.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.metric.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != 30 {
            return None;
        }
        Some(TimedSample {
            ts: i64::from_le_bytes(b.get(0..8)?.try_into().ok()?),
            weight: i64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
            stack: u32::from_le_bytes(b.get(16..20)?.try_into().ok()?),
            thread: u32::from_le_bytes(b.get(20..24)?.try_into().ok()?),
            count: u32::from_le_bytes(b.get(24..28)?.try_into().ok()?),
            metric: u16::from_le_bytes(b.get(28..30)?.try_into().ok()?),
        })
    }
}
