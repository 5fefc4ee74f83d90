//! One Gecko thread into the [`StackAggregator`]: frames from `frameTable`
//! locations, stacks from `stackTable` prefix links (cycle-safe, no
//! recursion), and samples weighted by the time to the next sample.

use crate::api::{ExtractError, ExtractObserver, LimitationLog};
use crate::folded::NO_FRAMES;
use crate::stacks::{MetricId, StackAggregator, ThreadInfo};

use super::location::parse_location;
use super::model::{Cell, Table, Thread};
use super::{INVALID_FRAME, INVALID_STACK, INVALID_STRING, ROOT};

const POLL_EVERY: usize = 64 * 1024;

/// What every thread of one process shares.
pub(super) struct Process {
    /// `meta.startTime` in ns since the epoch (0 when missing).
    pub start_ns: i64,
    /// `meta.interval` in ns, when usable.
    pub interval_ns: Option<i64>,
    /// `libs` as `[start, end)` address ranges with names and their place
    /// in the list, sorted by start (see [`Process::lib_at`]).
    pub libs: Vec<(u64, u64, String, usize)>,
}

/// Libraries [`Process::lib_at`] looks back at among those starting at or
/// before an address (overlapping libraries are rare; a bound keeps a
/// hostile list from making every address frame a scan of all of them).
const LIB_LOOKBACK: usize = 32;

impl Process {
    /// Sorts `libs` by start for [`Self::lib_at`].
    pub fn new(start_ns: i64, interval_ns: Option<i64>, libs: Vec<(u64, u64, String)>) -> Process {
        let mut libs: Vec<(u64, u64, String, usize)> = libs
            .into_iter()
            .enumerate()
            .map(|(i, (start, end, name))| (start, end, name, i))
            .collect();
        libs.sort_by_key(|l| (l.0, l.3));
        Process {
            start_ns,
            interval_ns,
            libs,
        }
    }

    /// The name of the library whose `[start, end)` holds `address` (the
    /// first in the profile's list when several do).
    pub fn lib_at(&self, address: u64) -> Option<&str> {
        let upto = self.libs.partition_point(|l| l.0 <= address);
        self.libs[..upto]
            .iter()
            .rev()
            .take(LIB_LOOKBACK)
            .filter(|l| address < l.1)
            .min_by_key(|l| l.3)
            .map(|l| l.2.as_str())
    }
}

/// State shared across threads and processes.
pub(super) struct Builder {
    pub agg: StackAggregator,
    pub log: LimitationLog,
    pub samples_metric: MetricId,
    pub time_metric: MetricId,
    pub samples: u64,
    pub timed: bool,
    pub thread_ids: bool,
    pub unsymbolized: bool,
    pub source_locations: bool,
    /// Earliest sample and latest sample end, in ns.
    pub span: Option<(i64, i64)>,
}

/// How far a `stackTable` row has been resolved.
#[derive(Clone, Copy)]
enum Slot {
    Todo,
    /// On the prefix path being resolved right now.
    Open,
    /// The stack id (`None`: the dropped `(root)` alone).
    Done(Option<u32>),
}

/// Per-thread lookups: the thread's tables and what was made of them.
struct ThreadTables<'t> {
    strings: &'t [super::model::MaybeStr],
    frames: &'t Table,
    stacks: &'t Table,
    location_col: Option<usize>,
    prefix_col: Option<usize>,
    frame_col: Option<usize>,
    frame_ids: Vec<Option<u32>>,
    slots: Vec<Slot>,
}

impl Builder {
    /// Adds one thread's samples.
    pub(super) fn thread(
        &mut self,
        n: usize,
        thread: &Thread,
        process: &Process,
        observer: &dyn ExtractObserver,
    ) -> Result<(), ExtractError> {
        let Some(samples) = thread.samples.as_ref() else {
            return Ok(());
        };
        let rows = samples.rows();
        if rows.is_empty() {
            return Ok(());
        }
        let empty = Table::default();
        let frames = thread.frame_table.as_ref().unwrap_or(&empty);
        let stacks = thread.stack_table.as_ref().unwrap_or(&empty);
        let stack_col = samples.column("stack");
        if stack_col.is_none() {
            self.log.note_n("missing_column", rows.len() as u64, || {
                format!(
                    "thread {n}: the samples schema has no `stack` column; its samples are skipped"
                )
            });
            return Ok(());
        }
        let mut tables = ThreadTables {
            strings: thread.string_table.as_deref().unwrap_or(&[]),
            frames,
            stacks,
            location_col: frames.column("location"),
            prefix_col: stacks.column("prefix"),
            frame_col: stacks.column("frame"),
            frame_ids: vec![None; frames.rows().len()],
            slots: vec![Slot::Todo; stacks.rows().len()],
        };
        if !stacks.rows().is_empty() && (tables.prefix_col.is_none() || tables.frame_col.is_none())
        {
            self.log.note("missing_column", || {
                format!("thread {n}: the stackTable schema lacks `prefix` or `frame`; missing links read as none")
            });
        }
        if !frames.rows().is_empty() && tables.location_col.is_none() {
            self.log.note("missing_column", || {
                format!("thread {n}: the frameTable schema has no `location` column; frames are `{INVALID_STRING}`")
            });
        }

        let info = ThreadInfo {
            pid: thread.pid.and_then(id_of),
            tid: thread.tid.and_then(id_of),
            thread_name: thread.name.clone().filter(|s| !s.is_empty()),
            process_name: thread.process_name.clone().filter(|s| !s.is_empty()),
        };
        self.thread_ids |= info.tid.is_some();
        let tid = self.agg.thread(info);

        // (relative ns or None, stack) per sample, in file order.
        let time_col = samples.column("time");
        if time_col.is_none() {
            self.log.note("no_sample_times", || {
                format!("thread {n}: the samples schema has no `time` column; only cpu.samples, no cpu.time_ns")
            });
        }
        let mut parsed: Vec<(Option<i64>, u32)> = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            if i % POLL_EVERY == POLL_EVERY - 1 && observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
            let stack = match row.get(stack_col) {
                Cell::Null => self.fixed_stack(NO_FRAMES),
                cell => match cell.index().filter(|&s| s < tables.slots.len()) {
                    Some(s) => self.resolve(n, s, &mut tables, process),
                    None => {
                        self.log.note("stack_index_out_of_range", || {
                            format!(
                                "thread {n}: sample {i} names stack {cell:?}, outside the stackTable (length {}); kept as `{INVALID_STACK}`",
                                tables.slots.len()
                            )
                        });
                        self.fixed_stack(INVALID_STACK)
                    }
                },
            };
            let rel_ns = match (time_col, row.get(time_col).number()) {
                (None, _) => None,
                (Some(_), Some(ms)) if (ms * 1e6).abs() < 9.0e18 => Some((ms * 1e6).round() as i64),
                (Some(_), _) => {
                    self.log.note("invalid_sample_time", || {
                        format!("thread {n}: sample {i} has no numeric time; it counts under cpu.samples only")
                    });
                    None
                }
            };
            parsed.push((rel_ns, stack));
        }
        self.weigh(n, tid, &parsed, process);
        Ok(())
    }

    /// Adds the samples: untimed ones to `cpu.samples` only; timed ones, in
    /// time order, to both metrics, each lasting until the next timed
    /// sample of the thread (the last one: `meta.interval`).
    fn weigh(&mut self, n: usize, tid: u32, parsed: &[(Option<i64>, u32)], process: &Process) {
        let mut timed: Vec<(i64, u32)> = Vec::with_capacity(parsed.len());
        for &(t, stack) in parsed {
            self.samples += 1;
            match t {
                Some(t) => timed.push((t, stack)),
                None => self
                    .agg
                    .add_metric_sample(self.samples_metric, stack, tid, None, 1, 1),
            }
        }
        let backwards = timed.windows(2).filter(|w| w[1].0 < w[0].0).count() as u64;
        self.log.note_n("samples_out_of_order", backwards, || {
            format!("thread {n}: sample times go backwards; samples are put in time order before durations are taken")
        });
        if backwards > 0 {
            timed.sort_by_key(|s| s.0);
        }
        if !timed.is_empty() {
            self.timed = true;
            if process.interval_ns.is_none() {
                self.log.note("no_interval", || {
                    "meta.interval is missing or not a positive number: the last sample of each thread lasts 0".into()
                });
            }
        }
        for (k, &(t, stack)) in timed.iter().enumerate() {
            let dur = match timed.get(k + 1) {
                Some(next) => next.0.saturating_sub(t),
                None => process.interval_ns.unwrap_or(0),
            };
            let ts = process.start_ns.saturating_add(t);
            let end = ts.saturating_add(dur);
            self.span = Some(match self.span {
                Some((a, b)) => (a.min(ts), b.max(end)),
                None => (ts, end),
            });
            self.agg
                .add_metric_sample(self.samples_metric, stack, tid, Some(ts), 1, 1);
            self.agg
                .add_metric_sample(self.time_metric, stack, tid, Some(ts), dur, 1);
        }
    }

    /// A one-frame root stack for a placeholder.
    fn fixed_stack(&mut self, name: &str) -> u32 {
        let f = self.agg.frame(name, None, None, None, "unknown", false);
        self.agg.stack(None, f)
    }

    /// The stack id of `stackTable` row `s`: walks the prefix links up to a
    /// resolved row (or a root) without recursion, then makes the stacks
    /// down. A link that closes a cycle, or names a row outside the table,
    /// is cut: that row becomes a root.
    fn resolve(&mut self, n: usize, s: usize, t: &mut ThreadTables, process: &Process) -> u32 {
        if let Slot::Done(id) = t.slots[s] {
            return id.unwrap_or_else(|| self.root_frame_stack(None));
        }
        // Rows still to make, innermost first; the last one sits on `base`.
        let mut path = vec![s];
        t.slots[s] = Slot::Open;
        // (base stack, whether the outermost row has a null prefix)
        let (base, null_prefix) = loop {
            let top = path[path.len() - 1];
            let cell = t.stacks.rows()[top].get(t.prefix_col);
            if cell == Cell::Null {
                break (None, true);
            }
            let Some(p) = cell.index().filter(|&p| p < t.slots.len()) else {
                self.log.note("stack_prefix_out_of_range", || {
                    format!("thread {n}: stack {top} has prefix {cell:?}, outside the stackTable; it is read as a root")
                });
                break (None, false);
            };
            match t.slots[p] {
                Slot::Done(id) => break (id, false),
                Slot::Open => {
                    self.log.note("stack_prefix_cycle", || {
                        format!("thread {n}: the prefix links from stack {top} lead back to stack {p}; the cycle is cut there and stack {top} is read as a root")
                    });
                    break (None, false);
                }
                Slot::Todo => {
                    t.slots[p] = Slot::Open;
                    path.push(p);
                }
            }
        };
        let mut id = base;
        for (k, &row_index) in path.iter().enumerate().rev() {
            let frame_cell = t.stacks.rows()[row_index].get(t.frame_col);
            let outermost = k + 1 == path.len();
            id = match self.frame(n, frame_cell, t, process) {
                // The profiler's synthetic root label: dropped.
                FrameRef::Root if outermost && null_prefix => None,
                FrameRef::Root => Some(self.root_frame_stack(id)),
                FrameRef::Id(f) => Some(self.agg.stack(id, f)),
            };
            t.slots[row_index] = Slot::Done(id);
        }
        match id {
            Some(id) => id,
            None => self.root_frame_stack(None),
        }
    }

    fn root_frame_stack(&mut self, parent: Option<u32>) -> u32 {
        let f = self.agg.frame(ROOT, None, None, None, "unknown", true);
        self.agg.stack(parent, f)
    }

    /// The aggregator frame of `frameTable` row `cell`.
    fn frame(&mut self, n: usize, cell: Cell, t: &mut ThreadTables, process: &Process) -> FrameRef {
        let Some(i) = cell.index().filter(|&i| i < t.frame_ids.len()) else {
            self.log.note("frame_index_out_of_range", || {
                format!(
                    "thread {n}: a stack names frame {cell:?}, outside the frameTable (length {}); kept as `{INVALID_FRAME}`",
                    t.frame_ids.len()
                )
            });
            return FrameRef::Id(
                self.agg
                    .frame(INVALID_FRAME, None, None, None, "unknown", false),
            );
        };
        if let Some(id) = t.frame_ids[i] {
            return FrameRef::Id(id);
        }
        let location = t.frames.rows()[i].get(t.location_col);
        let text = location
            .index()
            .and_then(|s| t.strings.get(s))
            .and_then(|s| s.0.as_deref());
        let Some(text) = text else {
            self.log.note("string_index_out_of_range", || {
                format!(
                    "thread {n}: frame {i} has location {location:?}, not an index into the stringTable (length {}); kept as `{INVALID_STRING}`",
                    t.strings.len()
                )
            });
            let id = self
                .agg
                .frame(INVALID_STRING, None, None, None, "unknown", false);
            t.frame_ids[i] = Some(id);
            return FrameRef::Id(id);
        };
        if text == ROOT {
            return FrameRef::Root;
        }
        let loc = parse_location(text);
        let module = match (loc.module, loc.address) {
            (Some(m), _) => Some(m),
            (None, Some(a)) => process.lib_at(a),
            _ => None,
        };
        self.unsymbolized |= loc.address.is_some();
        self.source_locations |= loc.file.is_some();
        let id = self.agg.frame(
            &loc.function,
            loc.file,
            loc.line,
            module,
            loc.language,
            loc.address.is_none(),
        );
        t.frame_ids[i] = Some(id);
        FrameRef::Id(id)
    }
}

/// A frame, or the profiler's synthetic `(root)` label.
enum FrameRef {
    Root,
    Id(u32),
}

/// A pid/tid written as a number or a numeric string.
fn id_of(cell: Cell) -> Option<i64> {
    cell.int()
}
