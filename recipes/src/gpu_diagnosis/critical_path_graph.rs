//! Critical path of one step (a window), after HTA 0.5.0's critical path
//! analysis (`hta/analyzers/critical_path_analysis.py`): the chain of host
//! work, launches, device work and waits that sets the step's length, split
//! into CPU, GPU compute / communication / memory, launch delay and
//! kernel-to-kernel gaps. Answers "would a faster GPU (or CPU) shorten the
//! step?", which busy/idle totals cannot. Plain data in and out; times in ns.
//!
//! Graph rules (HTA's unless listed below):
//! - Window `[start, end]`: host events with `start ≤ ts ≤ end` and `end > ts`;
//!   device events whose launch (host event with the same correlation) is
//!   kept. Queue lengths and record lookups read the whole input: pass a
//!   superset (whole threads and queues, or a margin before the window).
//! - Nodes: a start and an end node per kept host and device event.
//! - Host, per thread, depth-first by `parent`, siblings by (ts, longer first):
//!   enter `op`: last node → `op.start`; exit: last node → `op.end`, weight 0
//!   when `op.blocking` (the wait is not CPU work); consecutive top-level ops:
//!   0-weight dependency `prev.end → next.start` (idle between them never
//!   counts). Weights are `to.ts − from.ts` unless stated.
//! - Device, per queue in ts order: duration edge; then a launch edge
//!   `launch.start → start` if the queue was empty at the launch (length 1
//!   right after the launch and 0 right after the start; length = launches
//!   − starts on the queue, sorted sweep) and the previous event on the queue
//!   and every wait source ended before `launch.ts`; else a kernel-kernel
//!   edge `prev.end → start` if every wait source ended before `prev.end`.
//! - Syncs, 0 weight, to the call's end node: [`SyncRecord::Stream`] from the
//!   last kept event on the queue that started before the call ended;
//!   [`SyncRecord::Device`] the same for every queue; [`SyncRecord::Event`]
//!   from the event of the last launch onto the recorded queue at or before
//!   the record call. [`SyncRecord::StreamWait`]: that event's end → start of
//!   the next launch (same thread, `ts ≥` wait call) onto the waiting queue.
//! - Attribution (`_attribute_edge`): kernel-kernel → previous event;
//!   (start, ·) → source event; (end, end) → destination; (end, start) → the
//!   source's parent. Launch, dependency and sync edges: none.
//! - Bound: launch → `KernelLaunchDelay`, kernel-kernel → `KernelKernelDelay`,
//!   dependency/sync → `Dependency`, else by the attributed event: host →
//!   `Cpu`, device by class. Negative weights become 0 and are counted.
//! - Path: longest path by DP over a topological order (Kahn, ready nodes by
//!   (ts, id)); a cycle is an error. Ties: first predecessor relaxed wins;
//!   the path ends at the first node in that order with the largest length.
//!   Length = Σ path weights = Σ `by_bound`. Work O(nodes + edges) + sorting.
//!
//! Differences from HTA:
//! - Nesting comes from `parent` (HTA rebuilds stacks from ts/dur, with user
//!   annotations as transparent levels); (end, start) edges go to the
//!   nearest host-event ancestor, not to an annotation in between.
//! - A launch is any host event whose correlation a device event carries
//!   (HTA: a list of launch API names), so synchronous `cudaMemcpy` and graph
//!   launches count; a call matched by N device events (`cudaGraphLaunch`)
//!   keeps all N and counts N launches (HTA keeps one, drops the rest).
//! - Device events without a launch in the input are kept when `ts` is in
//!   the window (duration and kernel-kernel edges, no launch edge); HTA
//!   drops them.
//! - Queue sweep ties: starts before launches, but never an event's start
//!   before its own launch (HTA: unstable sort). Record lookup takes
//!   launches with `ts ≤` the record.
//! - Stream/device sync sources are chosen by the host call's end (HTA: the
//!   GPU sync record's end); device sync covers every queue in the input.
//! - Stream waits are resolved before the sweep (HTA loses one whose GPU
//!   record sorts after the dependent kernel); several waits on one event all
//!   count (HTA keeps the last); a wait within one queue is ignored (HTA:
//!   graph invalid).
//! - Clamped weights are also what the path sums (HTA's breakdown sums the
//!   unclamped weight). Memory events are `GpuMemory` (HTA: compute bound).
//! - No ns→µs rounding, no zero-weight launch edges (simulation), no strict mode.
//!
//! Same length, breakdown and node/edge counts as HTA (pandas-3 fixes) on five
//! corpus windows after HTA's µs rounding (a CUDA-graph one: same length,
//! more kernels); see `alexnet_matches_hta`.

use std::cmp::Reverse;

pub use super::critical_path_model::{
    Bound, CpError, CpLimits, CriticalPath, DeviceClass, DeviceEvent, EventRef, HostEvent,
    PathEdge, StepGraphInput, SyncRecord,
};
use super::critical_path_model::{Graph, Kind, NO_NODE};
use super::critical_path_sync::{device_side, launches, longest_path};

/// The critical path of `input.window`; see the module doc for the rules.
pub fn critical_path(input: &StepGraphInput, limits: &CpLimits) -> Result<CriticalPath, CpError> {
    let (hosts, devices) = (input.hosts, input.devices);
    let (w0, w1) = input.window;
    let l = launches(hosts, devices);
    let host_kept: Vec<bool> = hosts
        .iter()
        .map(|h| h.ts >= w0 && h.ts <= w1 && h.end > h.ts)
        .collect();
    let dev_kept: Vec<bool> = devices
        .iter()
        .zip(&l.launch)
        .map(|(d, launch)| match launch {
            Some(h) => host_kept[*h],
            None => d.ts >= w0 && d.ts <= w1,
        })
        .collect();
    let hosts_kept: Vec<usize> = (0..hosts.len()).filter(|&h| host_kept[h]).collect();
    let devs_kept: Vec<usize> = (0..devices.len()).filter(|&d| dev_kept[d]).collect();
    let nodes = 2 * (hosts_kept.len() + devs_kept.len());
    if nodes > limits.max_nodes || nodes >= NO_NODE as usize {
        return Err(CpError::TooManyNodes {
            nodes,
            limit: limits.max_nodes,
        });
    }
    let mut host_node = vec![NO_NODE; hosts.len()];
    for (k, &h) in hosts_kept.iter().enumerate() {
        host_node[h] = 2 * k as u32;
    }
    let mut dev_node = vec![NO_NODE; devices.len()];
    for (k, &d) in devs_kept.iter().enumerate() {
        dev_node[d] = 2 * (hosts_kept.len() + k) as u32;
    }
    let mut g = Graph {
        input,
        hosts_kept,
        devs_kept,
        host_node,
        dev_node,
        edges: Vec::new(),
        max_edges: limits.max_edges,
        negatives: 0,
        syncs: 0,
    };
    host_edges(&mut g)?;
    let unresolved = device_side(&mut g, &l, &host_kept, &dev_kept)?;
    let mut cp = longest_path(&g, nodes)?;
    cp.syncs_unresolved = unresolved;
    Ok(cp)
}

fn host_edges(g: &mut Graph) -> Result<(), CpError> {
    let hosts = g.input.hosts;
    let bad = |h: usize, p: usize| p >= hosts.len() || hosts[p].thread != hosts[h].thread;
    if let Some(&host) = g
        .hosts_kept
        .iter()
        .find(|&&h| hosts[h].parent.is_some_and(|p| bad(h, p)))
    {
        return Err(CpError::BadParent { host });
    }
    // Group = parent index, or ROOT | thread; sorted, roots come last.
    const ROOT: u64 = 1 << 63;
    let group = |h: usize| match hosts[h].parent {
        Some(p) if g.host_node[p] != NO_NODE => p as u64,
        _ => ROOT | u64::from(hosts[h].thread),
    };
    let mut order: Vec<(u64, i64, Reverse<i64>, usize)> = g
        .hosts_kept
        .iter()
        .map(|&h| (group(h), hosts[h].ts, Reverse(hosts[h].end), h))
        .collect();
    order.sort_unstable();
    // Children of host h: order[children[h].0..children[h].1].
    let mut children = vec![(0usize, 0usize); hosts.len()];
    let roots = order.partition_point(|o| o.0 & ROOT == 0);
    let mut i = 0;
    while i < roots {
        let j = i + order[i..roots].partition_point(|o| o.0 == order[i].0);
        children[order[i].0 as usize] = (i, j);
        i = j;
    }
    let mut visited = vec![false; hosts.len()];
    let mut last_top: Option<(u32, u32)> = None;
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for &(_, _, _, r) in &order[roots..] {
        if let Some((_, prev_end)) = last_top.filter(|t| t.0 == hosts[r].thread) {
            g.add(prev_end, g.host_node[r], Kind::Dependency, true)?;
        }
        visited[r] = true;
        let mut last = g.host_node[r];
        stack.push((r, children[r].0));
        while let Some(top) = stack.last_mut() {
            let (h, pos) = *top;
            if pos < children[h].1 {
                top.1 += 1;
                let c = order[pos].3;
                g.add(last, g.host_node[c], Kind::Operator, false)?;
                (last, visited[c]) = (g.host_node[c], true);
                stack.push((c, children[c].0));
            } else {
                stack.pop();
                g.add(last, g.host_node[h] + 1, Kind::Operator, hosts[h].blocking)?;
                last = g.host_node[h] + 1;
            }
        }
        last_top = Some((hosts[r].thread, g.host_node[r] + 1));
    }
    match g.hosts_kept.iter().find(|&&h| !visited[h]) {
        Some(&host) => Err(CpError::BadParent { host }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::critical_path_sync::tests::{path, run, run_with};
    use super::*;

    #[test]
    fn pure_cpu_step_is_all_cpu() {
        // A[0,100]{B[10,40], C[50,90]}, D[120,150]: A 10, B 30, B.e→C.s 10 (→ A),
        // C 40, C.e→A.e 10, dependency 0, D 30 = 130; idle 100..120 not counted.
        let cp = run("H 0 0 100; H 0 10 40 0; H 0 50 90 0; H 0 120 150");
        assert_eq!(path(&cp), "130: C10 C30 C10 C40 C10 D0 C30");
        let cp = cp.unwrap();
        assert_eq!(
            (cp.nodes, cp.graph_edges, cp.by_bound[0]),
            (8, 7, (Bound::Cpu, 130))
        );
        use EventRef::{Host as H, None as Unattributed};
        let events: Vec<EventRef> = cp.edges.iter().map(|e| e.event).collect();
        assert_eq!(events, [H(0), H(1), H(0), H(2), H(0), Unattributed, H(3)]);
    }

    #[test]
    fn blocking_wait_is_not_cpu_time() {
        // A[0,100]{S[10,90] blocking}: A 10 + S 0 + A 10 = 20 (100 if not blocking).
        assert_eq!(path(&run("H 0 0 100; H 0 10 90 0 1")), "20: C10 C0 C10");
        assert_eq!(path(&run("H 0 0 100; H 0 10 90 0 0")), "100: C10 C80 C10");
        // A[0,100]{L[2,8]→K[9,85] q0, S[10,90] stream sync q0}: A 2, launch 7,
        // K 76, sync 0, A 10 = 95; CPU 12.
        let cp = run("H 0 0 100; H 0 2 8 0 0 1; H 0 10 90 0 1 2; D 0 9 85 1; SS 0 2");
        assert_eq!(path(&cp), "95: C2 L7 G76 D0 C10");
    }

    #[test]
    fn window_negative_weights_and_unlaunched_device_events() {
        // A[0,50]{B[10,60]} ends before its child: B.e→A.e = −10 → 0, counted.
        // C[2000,2010] is outside the window, so is its kernel; K0 has no launch:
        // duration edge only. Path: A 10 + B 50 = 60, ends at B.e (first node
        // with the largest length; K0: 30).
        let cp = run("H 0 0 50; H 0 10 60 0; H 0 2000 2010 - 0 7; D 0 5 35 -; D 0 2020 2030 7");
        assert_eq!(path(&cp), "60: C10 C50");
        let cp = cp.unwrap();
        assert_eq!(
            (cp.negative_weights_clamped, cp.nodes, cp.graph_edges),
            (1, 6, 4)
        );
    }

    #[test]
    fn limits_and_bad_parents_are_errors() {
        let four = "H 0 0 10; H 0 20 30; H 0 40 50; H 0 60 70"; // 8 nodes, 7 edges
        let nodes = run_with(
            four,
            CpLimits {
                max_nodes: 7,
                max_edges: 99,
            },
        );
        assert_eq!(nodes, Err(CpError::TooManyNodes { nodes: 8, limit: 7 }));
        let edges = run_with(
            four,
            CpLimits {
                max_nodes: 99,
                max_edges: 3,
            },
        );
        assert_eq!(edges, Err(CpError::TooManyEdges { limit: 3 }));
        let other_thread = run("H 0 0 10; H 1 1 2 0");
        assert_eq!(other_thread, Err(CpError::BadParent { host: 1 }));
        let parent_cycle = run("H 0 0 10 1; H 0 1 2 0");
        assert_eq!(parent_cycle, Err(CpError::BadParent { host: 0 }));
    }
}
