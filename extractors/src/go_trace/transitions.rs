//! How a goroutine moves between states: each transition closes the
//! interval of the state it leaves (with the reason it entered it and the
//! stack of that event) and mirrors running intervals onto the P track.
//! Inconsistent input (a start of a goroutine that is not runnable, a P
//! running two goroutines) is noted and repaired, never a panic.

use super::model::{GoroutineInfo, SliceKind, StackId, TimelineSink, TimelineSlice, Track};
use super::sched_event::DeclaredState;
use super::states::{GKind, GState, TimelineBuilder, arg, goroutine_display, new_g, span};

impl<S: TimelineSink> TimelineBuilder<'_, S> {
    /// The goroutine's state, created (name unknown, existing before the
    /// trace) when first seen here.
    pub(super) fn g_mut(&mut self, g: u64, ts: u64) -> &mut GState {
        self.goroutines.entry(g).or_insert_with(|| {
            new_g(
                GoroutineInfo {
                    id: g,
                    ..GoroutineInfo::default()
                },
                ts,
            )
        })
    }

    /// Notes (returns false) when `g` is not in one of `kinds`; a goroutine
    /// first seen here is accepted.
    pub(super) fn expect(&mut self, g: u64, ts: u64, kinds: &[GKind], what: &'static str) -> bool {
        let kind = self.g_mut(g, ts).kind;
        if kind == GKind::Unknown || kinds.contains(&kind) {
            return true;
        }
        self.note(what, || format!("G{g} was {kind:?} at {ts} ns"));
        false
    }

    pub(super) fn declare(
        &mut self,
        g: u64,
        ts: u64,
        state: DeclaredState,
        stack: Option<StackId>,
    ) {
        let (kind, p, reason) = match state {
            DeclaredState::Runnable => (GKind::Runnable, None, "runnable at trace start"),
            DeclaredState::Running { p } => (GKind::Running, p, ""),
            DeclaredState::Syscall => (GKind::Syscall, None, "syscall"),
            DeclaredState::Waiting => (GKind::Blocked, None, "waiting at trace start"),
        };
        let current = self.g_mut(g, ts).kind;
        if current == kind {
            return;
        }
        if !matches!(current, GKind::Unknown | GKind::Runnable) {
            self.note("declared goroutine state differs", || {
                format!("G{g} was {current:?}, declared {kind:?} at {ts} ns")
            });
        }
        self.transition(g, ts, kind, reason.into(), stack, p);
    }

    /// Closes `g`'s current interval at `ts` and enters `kind`.
    pub(super) fn transition(
        &mut self,
        g: u64,
        ts: u64,
        kind: GKind,
        reason: String,
        stack: Option<StackId>,
        p: Option<i64>,
    ) {
        let state = self.g_mut(g, ts);
        let end = ts.max(state.since);
        let old = (
            state.kind,
            state.since,
            std::mem::take(&mut state.reason),
            state.stack,
            state.p,
        );
        let old_label = state.info.label.clone();
        let display = goroutine_display(&state.info);
        let elapsed = end.saturating_sub(old.1);
        match old.0 {
            GKind::Running => state.info.running_ns = state.info.running_ns.saturating_add(elapsed),
            GKind::Runnable => {
                state.info.runnable_ns = state.info.runnable_ns.saturating_add(elapsed)
            }
            GKind::Blocked => state.info.blocked_ns = state.info.blocked_ns.saturating_add(elapsed),
            GKind::Syscall => state.info.syscall_ns = state.info.syscall_ns.saturating_add(elapsed),
            GKind::Unknown | GKind::Dead => {}
        }
        state.kind = kind;
        state.since = end;
        state.reason = reason;
        state.stack = stack;
        if kind == GKind::Running {
            state.p = p;
        }
        let (slice_kind, name) = match old.0 {
            GKind::Running => (SliceKind::Running, "running"),
            GKind::Runnable => (SliceKind::Runnable, "runnable"),
            GKind::Blocked => (SliceKind::Blocked, "blocked"),
            GKind::Syscall => (SliceKind::Syscall, "syscall"),
            GKind::Unknown | GKind::Dead => (SliceKind::Running, ""),
        };
        if let (GKind::Running, Some(op)) = (old.0, old.4) {
            if let Some(ps) = self.procs.get_mut(&op)
                && ps.running == Some(g)
            {
                ps.running = None;
            }
            if end > old.1 {
                let args = vec![arg("g", g)];
                self.emit(TimelineSlice {
                    args,
                    ..span(Track::Proc(op), SliceKind::Running, display, old.1, end)
                });
            }
        }
        if !name.is_empty() && end > old.1 {
            let mut args = Vec::new();
            if !old.2.is_empty() {
                args.push(arg("reason", &old.2));
            }
            if let (GKind::Running, Some(op)) = (old.0, old.4) {
                args.push(arg("p", op));
            }
            if let (GKind::Running, Some(label)) = (old.0, old_label) {
                args.push(arg("label", label));
            }
            self.emit(TimelineSlice {
                stack: old.3,
                args,
                ..span(Track::Goroutine(g), slice_kind, name, old.1, end)
            });
        }
        if let (GKind::Running, Some(p)) = (kind, p) {
            self.take_proc_for(g, p, end);
        }
    }

    /// Marks `p` as running `g`, first moving off any other goroutine the
    /// trace left running there.
    fn take_proc_for(&mut self, g: u64, p: i64, ts: u64) {
        let previous = self.procs.entry(p).or_default().running.replace(g);
        if let Some(other) = previous.filter(|&o| o != g) {
            self.note("P started a goroutine while running another", || {
                format!("P{p} G{other} -> G{g} at {ts} ns")
            });
            self.transition(
                other,
                ts,
                GKind::Runnable,
                "lost its P (inconsistent trace)".into(),
                None,
                None,
            );
            if let Some(ps) = self.procs.get_mut(&p) {
                ps.running = Some(g);
            }
        }
    }

    pub(super) fn stop_proc(&mut self, p: i64, ts: u64) {
        let Some((since, thread)) = self.procs.get_mut(&p).and_then(|s| s.active.take()) else {
            return;
        };
        let mut args = Vec::new();
        if let Some(thread) = thread {
            args.push(arg("thread", thread));
        }
        let end = ts.max(since);
        if end > since {
            self.emit(TimelineSlice {
                args,
                ..span(
                    Track::Proc(p),
                    SliceKind::ProcActive,
                    "P active",
                    since,
                    end,
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::GoTimeline;
    use super::super::sched_event::SchedEvent;
    use super::*;

    #[test]
    fn inconsistent_transitions_are_noted_and_repaired() {
        let mut sink = GoTimeline::default();
        let mut b = TimelineBuilder::new(&mut sink);
        let create = |g| SchedEvent::GoCreate {
            g,
            creator: 0,
            name: None,
            stack: None,
            blocked: false,
            in_syscall: false,
        };
        b.apply(0, create(1));
        b.apply(0, create(2));
        b.apply(
            10,
            SchedEvent::GoStart {
                g: 1,
                p: Some(0),
                label: None,
            },
        );
        // G2 starts on P0 while G1 still runs there: G1 is moved off.
        b.apply(
            20,
            SchedEvent::GoStart {
                g: 2,
                p: Some(0),
                label: None,
            },
        );
        // Unblocking a runnable goroutine changes nothing.
        b.apply(
            25,
            SchedEvent::GoUnblock {
                g: 1,
                by: 2,
                stack: None,
            },
        );
        // A time before the goroutine's current interval began is clamped.
        b.apply(5, SchedEvent::GoEnd { g: 2 });
        let totals = b.finish(30);
        assert_eq!(
            totals
                .notes
                .count("P started a goroutine while running another"),
            1
        );
        assert_eq!(
            totals.notes.count("GoUnblock of a goroutine not blocked"),
            1
        );
        for s in &sink.slices {
            assert!(s.start_ns <= s.end_ns, "{s:?}");
        }
        let p0: Vec<_> = sink
            .slices
            .iter()
            .filter(|s| s.track == Track::Proc(0))
            .map(|s| (s.name.as_str(), s.start_ns, s.end_ns))
            .collect();
        assert_eq!(p0, [("G1", 10, 20)]);
        let g1 = sink
            .goroutines
            .iter()
            .find(|g| g.id == 1)
            .map(|g| (g.running_ns, g.runnable_ns));
        assert_eq!(g1, Some((10, 20)));
        assert!(
            sink.slices
                .iter()
                .any(|s| s.args.iter().any(|(k, _)| k == "open_at_end"))
        );
    }
}
