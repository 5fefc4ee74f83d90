//! Android atrace / systrace markers carried in ftrace `print` events:
//! `B|pid|name` and `E|pid` slices per thread, `S|pid|name|cookie` /
//! `F|pid|name|cookie` async slices, `C|pid|name|value` counters, `I|pid|name`
//! instants, and the track-named variants `G`/`H`/`N`.
//!
//! Markers are replayed in time order after the input is read (see
//! `ftrace`), so a slice that begins and ends on different CPUs still pairs.

use crate::FastHashMap;

use super::decoder::{Decoder, EventRow, SlotKey};
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::EventKind;

#[derive(Default)]
pub struct Atrace {
    /// Open `B` slices per thread (store rows).
    open: FastHashMap<i32, Vec<usize>>,
    /// Open async slices by `(pid, track name, cookie)`.
    open_async: FastHashMap<(i32, u32, String), usize>,
}

impl Atrace {
    pub fn handle(&mut self, d: &mut Decoder, ts: i64, tid: i32, text: &str) {
        let mut parts = text.splitn(3, '|');
        let op = parts.next().unwrap_or("");
        let pid: Option<i32> = parts.next().and_then(|p| p.trim().parse().ok());
        let rest = parts.next().unwrap_or("");
        match (op, pid) {
            ("B", Some(pid)) => {
                let slot = d.slot(SlotKey::Thread(pid, tid));
                d.name_thread(tid, Some(pid), None);
                let row = push(d, slot, ts, -1, rest, false);
                self.open.entry(tid).or_default().push(row);
            }
            ("E", _) => match self.open.get_mut(&tid).and_then(Vec::pop) {
                Some(row) => close(d, row, ts),
                None => d.p.log.note("unmatched_slice_end", || {
                    "an atrace `E` has no open `B` on its thread; ignored".to_string()
                }),
            },
            ("I", Some(pid)) => {
                let slot = d.slot(SlotKey::Thread(pid, tid));
                push(d, slot, ts, 0, rest, true);
            }
            ("C", Some(pid)) => {
                let (name, value) = match rest.split_once('|') {
                    Some((name, tail)) => (name, tail.split('|').next().unwrap_or("")),
                    None => (rest, ""),
                };
                match value.trim().parse::<f64>() {
                    Ok(v) => d.named_counter(pid, name, ts, v, None),
                    Err(_) => malformed(d, text),
                }
            }
            ("S" | "F", Some(pid)) => {
                let Some((name, cookie)) = rest.rsplit_once('|') else {
                    return malformed(d, text);
                };
                self.async_slice(d, op == "S", pid, name, name, cookie, ts);
            }
            ("G" | "H", Some(pid)) => {
                // G|pid|track|name|cookie, H|pid|track|cookie
                let fields: Vec<&str> = rest.split('|').collect();
                match (op, fields.as_slice()) {
                    ("G", [track, name @ .., cookie]) if !name.is_empty() => {
                        let name = name.join("|");
                        self.async_slice(d, true, pid, track, &name, cookie, ts);
                    }
                    ("H", [track, cookie]) => {
                        self.async_slice(d, false, pid, track, "", cookie, ts);
                    }
                    _ => malformed(d, text),
                }
            }
            ("N", Some(pid)) => {
                let Some((track, name)) = rest.split_once('|') else {
                    return malformed(d, text);
                };
                let track = d.p.strings.intern(track);
                let slot = d.slot(SlotKey::Async(pid, track));
                push(d, slot, ts, 0, name, true);
            }
            _ => malformed(d, text),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn async_slice(
        &mut self,
        d: &mut Decoder,
        begin: bool,
        pid: i32,
        track: &str,
        name: &str,
        cookie: &str,
        ts: i64,
    ) {
        let track = d.p.strings.intern(track);
        let key = (pid, track, cookie.to_string());
        if begin {
            let slot = d.slot(SlotKey::Async(pid, track));
            let row = push(d, slot, ts, -1, name, false);
            self.open_async.insert(key, row);
        } else {
            match self.open_async.remove(&key) {
                Some(row) => close(d, row, ts),
                None => d.p.log.note("unmatched_slice_end", || {
                    "an atrace async end has no matching begin; ignored".to_string()
                }),
            }
        }
    }

    /// Writes every finished event to one run of `spill`; the slices still
    /// open stay in the store.
    pub fn spill_finished(
        &mut self,
        d: &mut Decoder,
        spill: &mut crate::trace_events::external::Spill,
    ) -> std::io::Result<()> {
        let open = || self.open.values().flatten().chain(self.open_async.values());
        let kept = super::spill::kept_rows(open());
        let open = self
            .open
            .values_mut()
            .flatten()
            .chain(self.open_async.values_mut());
        super::spill::spill_keeping_open(d, spill, open, &kept)
    }

    /// Slices still open at the end stay unterminated (`dur_ns = -1`).
    pub fn finish(self, d: &mut Decoder, _last_ts: i64) {
        let open =
            self.open.values().map(|v| v.len() as u64).sum::<u64>() + self.open_async.len() as u64;
        d.p.log.note_n("unterminated_slice", open, || {
            "a begin event has no matching end; kept with dur_ns = -1".to_string()
        });
    }
}

fn push(d: &mut Decoder, slot: u32, ts: i64, dur: i64, name: &str, instant: bool) -> usize {
    let name = d.p.strings.intern(name);
    let category = d.p.strings.intern("atrace");
    d.push_event(EventRow {
        slot,
        ts,
        dur,
        name,
        category,
        kind: if instant {
            EventKind::Instant
        } else {
            EventKind::CpuSlice
        },
        instant,
        correlation: NONE,
        args: None,
    })
}

fn close(d: &mut Decoder, row: usize, ts: i64) {
    let start = d.p.store.ts[row];
    d.p.store.dur[row] = ts.saturating_sub(start).max(0);
}

fn malformed(d: &mut Decoder, text: &str) {
    let example: String = text.chars().take(80).collect();
    d.p.log.note("malformed_atrace_marker", || {
        format!("an ftrace print is not an atrace marker ({example:?}); skipped")
    });
}
