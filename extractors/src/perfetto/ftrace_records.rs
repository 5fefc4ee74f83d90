//! Ftrace records waiting for the end of the input, where they are
//! replayed in time order (`ftrace`). Past the budget they go to sorted
//! runs in a spill file ([`crate::sorted_runs`]) and come back merged, so
//! a system trace of any length holds at most the budget.

use std::io;
use std::path::Path;

use crate::sorted_runs::{TimeOrderedRuns, TimedRecord};

/// One scheduling or atrace record, in the trace clock.
#[derive(Debug, Clone)]
pub struct FtraceRecord {
    pub ts: i64,
    pub cpu: u32,
    pub what: Record,
}

#[derive(Debug, Clone)]
pub enum Record {
    Switch {
        /// `None` in compact encoding: the task that was running.
        prev_pid: Option<i32>,
        prev_state: i64,
        next_pid: i32,
        next_prio: i32,
        next_comm: u32,
    },
    Waking {
        pid: i32,
        target_cpu: i32,
        comm: u32,
        waker: Option<i32>,
    },
    /// An atrace marker written by thread `tid`.
    Print { tid: i32, text: Box<str> },
    /// A hard interrupt handler (`irq_handler_entry/exit`, `number` the
    /// irq) or a softirq (`softirq_entry/exit`, `number` the vector) enters
    /// or leaves the record's CPU. `name` is interned (the handler's or
    /// the action's); `ret` is the handler's return (-1 when not said).
    Interrupt {
        soft: bool,
        enter: bool,
        number: i32,
        name: u32,
        ret: i32,
    },
}

const SWITCH: u8 = 0;
const WAKING: u8 = 1;
const PRINT: u8 = 2;
const INTERRUPT: u8 = 3;

/// A pid or tid that may be absent: a presence byte, then the value.
fn encode_optional(value: Option<i32>, out: &mut Vec<u8>) {
    out.push(u8::from(value.is_some()));
    out.extend_from_slice(&value.unwrap_or(0).to_le_bytes());
}

/// Reads the fields of a record's byte form in order.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_at_checked(N)?;
        self.0 = rest;
        head.try_into().ok()
    }
    fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_le_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn optional(&mut self) -> Option<Option<i32>> {
        let [present] = self.take()?;
        let value = self.i32()?;
        Some((present != 0).then_some(value))
    }
}

impl TimedRecord for FtraceRecord {
    fn ts(&self) -> i64 {
        self.ts
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let r = self;
        out.extend_from_slice(&r.ts.to_le_bytes());
        out.extend_from_slice(&r.cpu.to_le_bytes());
        match &r.what {
            Record::Switch {
                prev_pid,
                prev_state,
                next_pid,
                next_prio,
                next_comm,
            } => {
                out.push(SWITCH);
                encode_optional(*prev_pid, out);
                out.extend_from_slice(&prev_state.to_le_bytes());
                out.extend_from_slice(&next_pid.to_le_bytes());
                out.extend_from_slice(&next_prio.to_le_bytes());
                out.extend_from_slice(&next_comm.to_le_bytes());
            }
            Record::Waking {
                pid,
                target_cpu,
                comm,
                waker,
            } => {
                out.push(WAKING);
                out.extend_from_slice(&pid.to_le_bytes());
                out.extend_from_slice(&target_cpu.to_le_bytes());
                out.extend_from_slice(&comm.to_le_bytes());
                encode_optional(*waker, out);
            }
            Record::Print { tid, text } => {
                out.push(PRINT);
                out.extend_from_slice(&tid.to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            Record::Interrupt {
                soft,
                enter,
                number,
                name,
                ret,
            } => {
                out.push(INTERRUPT);
                out.push(u8::from(*soft) | u8::from(*enter) << 1);
                out.extend_from_slice(&number.to_le_bytes());
                out.extend_from_slice(&name.to_le_bytes());
                out.extend_from_slice(&ret.to_le_bytes());
            }
        }
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let mut f = Fields(bytes);
        let ts = f.i64()?;
        let cpu = f.u32()?;
        let [tag] = f.take()?;
        let what = match tag {
            SWITCH => Record::Switch {
                prev_pid: f.optional()?,
                prev_state: f.i64()?,
                next_pid: f.i32()?,
                next_prio: f.i32()?,
                next_comm: f.u32()?,
            },
            WAKING => Record::Waking {
                pid: f.i32()?,
                target_cpu: f.i32()?,
                comm: f.u32()?,
                waker: f.optional()?,
            },
            PRINT => {
                let tid = f.i32()?;
                let text = std::str::from_utf8(std::mem::take(&mut f.0)).ok()?;
                Record::Print {
                    tid,
                    text: text.into(),
                }
            }
            INTERRUPT => {
                let [flags] = f.take()?;
                if flags > 3 {
                    return None;
                }
                Record::Interrupt {
                    soft: flags & 1 != 0,
                    enter: flags & 2 != 0,
                    number: f.i32()?,
                    name: f.u32()?,
                    ret: f.i32()?,
                }
            }
            _ => return None,
        };
        if tag != PRINT && !f.0.is_empty() {
            return None;
        }
        Some(FtraceRecord { ts, cpu, what })
    }
}

/// The records of one trace, held up to a budget.
#[derive(Default)]
pub struct FtraceRecords {
    held: Vec<FtraceRecord>,
    spill: Option<TimeOrderedRuns<FtraceRecord>>,
}

impl FtraceRecords {
    /// Holds at most `budget` records; the rest go to runs in `dir`.
    pub fn spill_to(&mut self, dir: &Path, budget: usize) {
        self.spill = Some(TimeOrderedRuns::new(dir, "ftrace", budget));
    }

    pub fn push(&mut self, record: FtraceRecord) {
        self.held.push(record);
        if let Some(spill) = &mut self.spill
            && spill.full(self.held.len())
        {
            spill.write(&mut self.held);
        }
    }

    /// Every record in time order, records at one time in input order.
    pub fn sorted(
        &mut self,
    ) -> io::Result<Box<dyn Iterator<Item = io::Result<FtraceRecord>> + '_>> {
        match &mut self.spill {
            Some(spill) if spill.spilled() => {
                if !self.held.is_empty() {
                    spill.write(&mut self.held);
                }
                // The list's capacity (up to the budget) is not needed again.
                self.held = Vec::new();
                Ok(Box::new(spill.merge()?))
            }
            _ => {
                self.held.sort_by_key(|r| r.ts);
                Ok(Box::new(std::mem::take(&mut self.held).into_iter().map(Ok)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of record, with times that tie across what become runs.
    fn records() -> Vec<FtraceRecord> {
        (0..300i64)
            .map(|i| FtraceRecord {
                ts: (i * 37) % 50,
                cpu: (i % 4) as u32,
                what: match i % 5 {
                    0 => Record::Switch {
                        prev_pid: (i % 8 == 0).then_some(-(i as i32)),
                        prev_state: i64::MIN + i,
                        next_pid: i as i32,
                        next_prio: 120,
                        next_comm: u32::MAX - i as u32,
                    },
                    1 => Record::Waking {
                        pid: i as i32,
                        target_cpu: -1,
                        comm: 7,
                        waker: (i % 3 == 0).then_some(i as i32 + 1),
                    },
                    2 => Record::Print {
                        tid: i as i32,
                        text: format!("B|{i}|slice ünïcode {i}").into(),
                    },
                    3 => Record::Interrupt {
                        soft: i % 2 == 0,
                        enter: i % 3 == 0,
                        number: i as i32,
                        name: 9,
                        ret: -1,
                    },
                    _ => Record::Print {
                        tid: 0,
                        text: "".into(),
                    },
                },
            })
            .collect()
    }

    fn sorted(records: &mut FtraceRecords) -> Vec<String> {
        records
            .sorted()
            .unwrap()
            .map(|r| format!("{:?}", r.unwrap()))
            .collect()
    }

    #[test]
    fn spilled_records_replay_in_the_order_held_ones_do() {
        let dir = crate::spill_compare::spill_dir("ftrace-records");
        let mut held = FtraceRecords::default();
        records().into_iter().for_each(|r| held.push(r));
        let want = sorted(&mut held);
        assert_eq!(want.len(), 300);
        for budget in [1, 2, 7, 299, 300, 301] {
            let mut spilled = FtraceRecords::default();
            spilled.spill_to(&dir, budget);
            records().into_iter().for_each(|r| spilled.push(r));
            let wrote = spilled.spill.as_ref().is_some_and(TimeOrderedRuns::spilled);
            assert_eq!(wrote, budget <= 300, "budget {budget}");
            assert_eq!(sorted(&mut spilled), want, "budget {budget}");
        }
        crate::spill_compare::assert_no_spill_files_left(&dir);
    }

    #[test]
    fn damaged_bytes_are_refused() {
        let mut bytes = Vec::new();
        for record in records().into_iter().take(5) {
            bytes.clear();
            record.encode(&mut bytes);
            let back = FtraceRecord::decode(&bytes).expect("decodes");
            assert_eq!(format!("{back:?}"), format!("{record:?}"));
            if !matches!(record.what, Record::Print { .. }) {
                assert!(FtraceRecord::decode(&bytes[..bytes.len() - 1]).is_none());
                bytes.push(0);
                assert!(FtraceRecord::decode(&bytes).is_none());
            }
        }
        bytes[12] = 9;
        assert!(FtraceRecord::decode(&bytes).is_none(), "unknown tag");
    }
}
