//! Hard interrupts and softirqs on each CPU, from `irq_handler_entry/exit`
//! and `softirq_entry/exit`, as Trace Processor keeps them: one track per
//! CPU for each (`cpu N irq`, `cpu N softirq`), one `interrupt` row per
//! handler run, named by the handler (`virtio1-req.0`) or the softirq
//! action (`NET_RX`). They run ahead of whatever task the CPU had, so they
//! are no thread's and no call stack's: the time accounting reports them
//! beside the tasks' time on CPU.
//!
//! A hard interrupt does not nest in another on one CPU, nor a softirq in
//! another; an exit with no entry (the trace began inside the handler) is
//! counted and dropped, an entry with no exit is left open (`dur_ns` -1).

use crate::FastHashMap;
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::EventKind;

use super::decoder::{Decoder, EventRow, SlotKey};

/// The kernel's softirq actions, by vector.
const SOFTIRQ_ACTIONS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq vector `vec` (`softirq N` past the known ones).
pub fn softirq_action(vec: u32) -> String {
    SOFTIRQ_ACTIONS
        .get(vec as usize)
        .map_or_else(|| format!("softirq {vec}"), |a| (*a).to_owned())
}

struct Open {
    start: i64,
    number: i32,
    name: u32,
}

/// The handlers running on each CPU, while records replay in time order.
#[derive(Default)]
pub struct Interrupts {
    open: FastHashMap<(u32, bool), Open>,
    exits_without_entry: u64,
    entries_without_exit: u64,
}

impl Interrupts {
    pub fn enter(
        &mut self,
        d: &mut Decoder,
        cpu: u32,
        ts: i64,
        soft: bool,
        number: i32,
        name: u32,
    ) {
        if let Some(stale) = self.open.remove(&(cpu, soft)) {
            // Its exit was lost: it ended here at the latest.
            self.entries_without_exit += 1;
            row(d, cpu, soft, &stale, NONE, -1);
        }
        self.open.insert(
            (cpu, soft),
            Open {
                start: ts,
                number,
                name,
            },
        );
    }

    pub fn exit(&mut self, d: &mut Decoder, cpu: u32, ts: i64, soft: bool, number: i32, ret: i32) {
        match self.open.remove(&(cpu, soft)) {
            Some(open) if open.number == number || number < 0 => {
                row(d, cpu, soft, &open, ts, ret);
            }
            Some(open) => {
                self.entries_without_exit += 1;
                row(d, cpu, soft, &open, NONE, -1);
                self.exits_without_entry += 1;
            }
            None => self.exits_without_entry += 1,
        }
    }

    /// Writes the handlers still running at the end (open) and notes the
    /// unmatched ones.
    pub fn finish(self, d: &mut Decoder) {
        let mut open: Vec<((u32, bool), Open)> = self.open.into_iter().collect();
        open.sort_unstable_by_key(|(key, _)| *key);
        for ((cpu, soft), o) in open {
            row(d, cpu, soft, &o, NONE, -1);
        }
        d.p.log.note_n(
            "interrupt_exit_without_entry",
            self.exits_without_entry,
            || {
                "interrupt or softirq exits with no entry before them (the trace began inside the \
             handler) were dropped"
                    .to_string()
            },
        );
        d.p.log.note_n(
            "interrupt_entry_without_exit",
            self.entries_without_exit,
            || {
                "interrupt or softirq entries whose exit was lost are kept open (dur_ns -1)"
                    .to_string()
            },
        );
    }
}

/// One handler run; `end == NONE` leaves it open.
fn row(d: &mut Decoder, cpu: u32, soft: bool, open: &Open, end: i64, ret: i32) {
    let slot = d.slot(SlotKey::Interrupts(cpu, soft));
    let category = d.p.strings.intern(if soft { "softirq" } else { "irq" });
    let args = if soft {
        format!("{{\"cpu\":{cpu},\"vec\":{}}}", open.number)
    } else {
        let returned = match ret {
            1 => ",\"ret\":\"handled\"",
            0 => ",\"ret\":\"unhandled\"",
            _ => "",
        };
        format!("{{\"cpu\":{cpu},\"irq\":{}{returned}}}", open.number)
    };
    d.push_event(EventRow {
        slot,
        ts: open.start,
        dur: if end == NONE {
            -1
        } else {
            end.saturating_sub(open.start).max(0)
        },
        name: open.name,
        category,
        kind: EventKind::Interrupt,
        instant: false,
        correlation: NONE,
        args: Some(&args),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softirq_vectors_are_named_as_the_kernel_prints_them() {
        assert_eq!(softirq_action(4), "BLOCK");
        assert_eq!(softirq_action(7), "SCHED");
        assert_eq!(softirq_action(12), "softirq 12");
    }
}
