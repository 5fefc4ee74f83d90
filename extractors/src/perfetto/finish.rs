//! Turning slots into tracks once every descriptor has been read, then
//! handing the store to the shared nesting, emission and reductions.

use crate::{FastHashMap, FastHashSet};

use super::counter_runs::CounterNaming;
use super::decoder::{Decoder, SlotKey};
use super::proto::{UNIT_COUNT, UNIT_SIZE_BYTES, UNIT_TIME_NS};
use super::sequence::lossy;
use crate::trace_events::ids::NO_ID;
use crate::trace_events::tracks::{Ident, TrackKind};

/// How far up `parent_uuid` links are followed.
const MAX_TRACK_ANCESTRY: usize = 32;

fn pid_ident(pid: Option<i32>) -> Ident {
    match pid {
        Some(p) if p != 0 => Ident::Int(i64::from(p)),
        _ => Ident::None,
    }
}

impl Decoder {
    /// Creates the real tracks and rewrites every row's slot to its track;
    /// returns the track of each slot (for rows already spilled).
    pub fn resolve_tracks(&mut self) -> Vec<u32> {
        let slots = self.slots.clone();
        let mut map: Vec<u32> = Vec::with_capacity(slots.len());
        let mut undescribed = 0u64;
        for key in slots {
            let track = match key {
                SlotKey::Uuid(uuid) => {
                    let (track, described) = self.uuid_track(uuid);
                    undescribed += u64::from(!described);
                    track
                }
                SlotKey::Thread(pid, tid) => {
                    let pid = self.thread_pid(tid, Some(pid));
                    self.p.tracks.thread(pid, Ident::Int(i64::from(tid)))
                }
                SlotKey::Cpu(cpu) => {
                    let name = self.p.strings.intern(&format!("cpu {cpu}"));
                    self.p
                        .tracks
                        .add_named(TrackKind::Cpu, Ident::None, Ident::None, name)
                }
                SlotKey::Interrupts(cpu, soft) => {
                    let what = if soft { "softirq" } else { "irq" };
                    let name = self.p.strings.intern(&format!("cpu {cpu} {what}"));
                    self.p
                        .tracks
                        .add_named(TrackKind::Interrupt, Ident::None, Ident::None, name)
                }
                SlotKey::ThreadState(tid) => {
                    let pid = self.thread_pid(tid, None);
                    let name = self.p.strings.intern("thread state");
                    self.p.tracks.add_named(
                        TrackKind::ThreadState,
                        pid,
                        Ident::Int(i64::from(tid)),
                        name,
                    )
                }
                SlotKey::Counter(pid, name) => {
                    self.p.tracks.counter_track(pid_ident(Some(pid)), name)
                }
                SlotKey::Async(pid, name) => self.p.tracks.add_named(
                    TrackKind::Async,
                    pid_ident(Some(pid)),
                    Ident::None,
                    name,
                ),
            };
            map.push(track);
        }
        self.p.log.note_n("undescribed_track", undescribed, || {
            "events use a track uuid that no track descriptor describes; named `track <uuid>`"
                .to_string()
        });
        for t in self.p.store.track.iter_mut() {
            *t = map[*t as usize];
        }
        let counter_slots: FastHashSet<u32> = self.counter_uuids.values().copied().collect();
        let units = self.counter_units();
        for row in self.p.counters.iter_mut() {
            let slot = row.track;
            row.track = map[slot as usize];
            if row.unit == NO_ID
                && let Some(&unit) = units.get(&slot)
            {
                row.unit = unit;
            }
            if counter_slots.contains(&slot) || row.name == NO_ID {
                // Uuid counters are named after their track.
                let track = &self.p.tracks.list[row.track as usize];
                let name = self
                    .p
                    .tracks
                    .display_name(track, &self.p.strings)
                    .unwrap_or_else(|| "counter".to_string());
                row.name = self.p.strings.intern(&name);
            }
        }
        if self.counter_runs.as_ref().is_some_and(|r| r.spilled()) {
            // Held rows went to the last run before this; spilled rows are
            // named as they are read back, with the names of this moment.
            let names = map
                .iter()
                .map(|&track| {
                    let track = &self.p.tracks.list[track as usize];
                    let name = self
                        .p
                        .tracks
                        .display_name(track, &self.p.strings)
                        .unwrap_or_else(|| "counter".to_string());
                    self.p.strings.intern(&name)
                })
                .collect();
            self.counter_naming = Some(CounterNaming {
                map: map.clone(),
                units,
                counter_slots,
                names,
            });
        }
        self.name_tracks();
        map
    }

    fn thread_pid(&self, tid: i32, hint: Option<i32>) -> Ident {
        let known = self.threads.get(&tid).and_then(|t| t.0);
        pid_ident(hint.filter(|&p| p != 0).or(known))
    }

    /// The track of a uuid, and whether a descriptor described it.
    fn uuid_track(&mut self, uuid: u64) -> (u32, bool) {
        let Some(d) = self.descriptors.get(&uuid).cloned() else {
            let name = self.p.strings.intern(&format!("track {uuid}"));
            let kind = if self.counter_uuids.contains_key(&uuid) {
                TrackKind::Counter
            } else {
                TrackKind::Async
            };
            return (
                self.p
                    .tracks
                    .add_named(kind, Ident::None, Ident::None, name),
                false,
            );
        };
        let name = d
            .name
            .as_deref()
            .or(d.static_name.as_deref())
            .or(d.atrace_name.as_deref())
            .map(lossy);
        if let Some(thread) = &d.thread
            && let Some(tid) = thread.tid
        {
            let pid = self.thread_pid(tid, thread.pid);
            let track = self.p.tracks.thread(pid, Ident::Int(i64::from(tid)));
            return (track, true);
        }
        let (pid, tid) = self.ancestry(&d);
        let is_counter = d.counter.is_some() || self.counter_uuids.contains_key(&uuid);
        let label = name.or_else(|| {
            d.process.as_ref().and_then(|p| {
                p.pid
                    .and_then(|pid| self.process_names.get(&pid).cloned())
                    .or_else(|| p.pid.map(|pid| format!("process {pid}")))
            })
        });
        let label = label.unwrap_or_else(|| format!("track {uuid}"));
        let name = self.p.strings.intern(&label);
        let kind = if is_counter {
            TrackKind::Counter
        } else {
            TrackKind::Async
        };
        (
            self.p
                .tracks
                .add_named(kind, pid_ident(pid), pid_ident(tid), name),
            true,
        )
    }

    /// The process and thread a track belongs to, through its parents.
    fn ancestry(&self, d: &super::proto::TrackDescriptor) -> (Option<i32>, Option<i32>) {
        let mut current = Some(d);
        let mut tid = None;
        for _ in 0..MAX_TRACK_ANCESTRY {
            let Some(c) = current else { break };
            if let Some(t) = &c.thread {
                tid = tid.or(t.tid);
                if let Some(pid) = t.pid {
                    return (Some(pid), tid);
                }
            }
            if let Some(p) = &c.process {
                return (p.pid, tid);
            }
            current = c.parent_uuid.and_then(|u| self.descriptors.get(&u));
        }
        let pid = tid.and_then(|t| self.threads.get(&t).and_then(|x| x.0));
        (pid, tid)
    }

    /// Fills thread and process names from everything the trace said.
    fn name_tracks(&mut self) {
        for i in 0..self.p.tracks.list.len() {
            let (pid, tid) = {
                let t = &self.p.tracks.list[i];
                (t.pid, t.tid)
            };
            if let Ident::Int(tid_value) = tid
                && let Ok(tid32) = i32::try_from(tid_value)
                && let Some(name) = self.threads.get(&tid32).and_then(|t| t.1.clone())
            {
                let id = self.p.strings.intern(&name);
                self.p.tracks.thread_names.insert((pid, tid), id);
            }
            if let Ident::Int(pid_value) = pid
                && let Ok(pid32) = i32::try_from(pid_value)
                && let Some(name) = self.process_names.get(&pid32).cloned()
            {
                let id = self.p.strings.intern(&name);
                self.p.tracks.process_names.insert(pid, id);
            }
        }
    }

    /// Units of uuid counters from their descriptors, by slot.
    fn counter_units(&mut self) -> FastHashMap<u32, u32> {
        let mut units = FastHashMap::default();
        for (uuid, &slot) in &self.counter_uuids {
            let Some(c) = self.descriptors.get(uuid).and_then(|d| d.counter.as_ref()) else {
                continue;
            };
            let unit = match (c.unit_name.as_deref(), c.unit) {
                (Some(n), _) if !n.is_empty() => lossy(n),
                (_, Some(UNIT_TIME_NS)) => "ns".to_string(),
                (_, Some(UNIT_COUNT)) => "count".to_string(),
                (_, Some(UNIT_SIZE_BYTES)) => "bytes".to_string(),
                _ => continue,
            };
            units.insert(slot, self.p.strings.intern(&unit));
        }
        units
    }
}
