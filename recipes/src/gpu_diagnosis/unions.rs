//! Each device's busy time as sorted, disjoint segments — all work,
//! compute kernels, communication kernels — so that sections can ask how
//! much of a window a device computed, communicated or idled (the one
//! union definition of `crate::time_accounting::intervals`).

use std::collections::BTreeMap;

use super::device_rows::{WorkClass, WorkRows};
use crate::time_accounting::intervals::union_segments;

/// Segments of one device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceUnions {
    pub all: Vec<(i64, i64)>,
    pub compute: Vec<(i64, i64)>,
    pub communication: Vec<(i64, i64)>,
}

/// (artifact string id, device) → its segments.
pub type UnionsByDevice = BTreeMap<(u32, Option<i64>), DeviceUnions>;

/// Intervals of all work, compute and communication, before merging.
type Raw = [Vec<(i64, i64)>; 3];

pub fn device_unions(work: &WorkRows) -> UnionsByDevice {
    let mut raw: BTreeMap<(u32, Option<i64>), Raw> = BTreeMap::new();
    for r in &work.rows {
        let lists = raw.entry((r.artifact, r.device)).or_default();
        lists[0].push((r.ts, r.end));
        match r.class {
            WorkClass::Compute => lists[1].push((r.ts, r.end)),
            WorkClass::Communication => lists[2].push((r.ts, r.end)),
            _ => {}
        }
    }
    raw.into_iter()
        .map(|(key, [all, compute, communication])| {
            (
                key,
                DeviceUnions {
                    all: union_segments(all),
                    compute: union_segments(compute),
                    communication: union_segments(communication),
                },
            )
        })
        .collect()
}
