//! Device side of [`super::critical_path_graph`] (rules and HTA differences
//! are documented there): launch matching, queue lengths, sync resolution,
//! the duration, launch, kernel-kernel and sync edges, and the longest path
//! over the finished graph. Launches, queue lengths and record lookups read
//! the whole input, not only the window, as HTA reads the full trace for
//! them. Tests: device and sync rules, cycles, and the HTA reference.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use super::critical_path_model::{
    Bound, CpError, CriticalPath, DeviceEvent, Graph, HostEvent, Kind, NO_NODE, PathEdge,
    StepGraphInput, SyncRecord,
};

/// Each device event's launch and the queue state at that launch.
pub(super) struct Launches {
    /// Correlation → first host event carrying it.
    pub by_corr: HashMap<i64, usize>,
    /// Device index → host index of its launch.
    pub launch: Vec<Option<usize>>,
    /// HTA's "queue empty": queue length 1 right after the launch (this one
    /// only) and 0 right after the event started.
    pub empty_at_launch: Vec<bool>,
}

pub(super) fn launches(hosts: &[HostEvent], devices: &[DeviceEvent]) -> Launches {
    let mut by_corr = HashMap::with_capacity(hosts.len());
    for (i, h) in hosts.iter().enumerate() {
        if let Some(c) = h.correlation {
            by_corr.entry(c).or_insert(i);
        }
    }
    let launch: Vec<Option<usize>> = devices
        .iter()
        .map(|d| d.correlation.and_then(|c| by_corr.get(&c).copied()))
        .collect();
    // Sweep per queue: +1 at each launch, −1 at each start. At equal times
    // starts go before launches, except that an event never starts before
    // its own launch (clock skew): its −1 then follows every launch at that time.
    let mut items: Vec<(u32, i64, u8, usize)> = Vec::with_capacity(2 * devices.len());
    for (i, d) in devices.iter().enumerate() {
        if let Some(h) = launch[i] {
            let lt = hosts[h].ts;
            items.push((d.queue, lt, 1, i));
            items.push(match d.ts > lt {
                true => (d.queue, d.ts, 0, i),
                false => (d.queue, lt, 2, i),
            });
        }
    }
    items.sort_unstable();
    let mut after_launch = vec![0i64; devices.len()];
    let mut after_start = vec![0i64; devices.len()];
    let (mut queue, mut len) = (None, 0i64);
    for (q, _, kind, i) in items {
        if queue != Some(q) {
            (queue, len) = (Some(q), 0);
        }
        if kind == 1 {
            len += 1;
            after_launch[i] = len;
        } else {
            len -= 1;
            after_start[i] = len;
        }
    }
    let empty_at_launch = (0..devices.len())
        .map(|i| launch[i].is_some() && after_launch[i] == 1 && after_start[i] == 0)
        .collect();
    Launches {
        by_corr,
        launch,
        empty_at_launch,
    }
}

/// Resolved syncs: GPU→CPU (device, host call) and GPU→GPU (source, dependent).
#[derive(Debug, Default, PartialEq, Eq)]
struct SyncEdges {
    to_host: Vec<(usize, usize)>,
    waits: Vec<(usize, usize)>,
    /// Syncs whose call is in the window but whose device side was not found.
    unresolved: usize,
}

/// Launches sorted by (launch ts, host, device ts, device): (ts, host, device).
type LaunchList = Vec<(i64, usize, usize)>;

/// Adds the device and sync edges; returns the unresolved sync count.
pub(super) fn device_side(
    g: &mut Graph,
    l: &Launches,
    host_kept: &[bool],
    dev_kept: &[bool],
) -> Result<usize, CpError> {
    let (hosts, devices) = (g.input.hosts, g.input.devices);
    let mut per_queue: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &d in &g.devs_kept {
        per_queue.entry(devices[d].queue).or_default().push(d);
    }
    for list in per_queue.values_mut() {
        list.sort_unstable_by_key(|&d| (devices[d].ts, d));
    }
    let s = resolve(g.input, l, host_kept, dev_kept, &per_queue);
    let mut waits = s.waits;
    waits.sort_unstable_by_key(|&(s, d)| (d, s));
    for list in per_queue.values() {
        let mut prev: Option<usize> = None;
        for &d in list {
            let node = g.dev_node[d];
            g.add(node, node + 1, Kind::Operator, false)?;
            let first = waits.partition_point(|w| w.1 < d);
            let mut wait_end: Option<i64> = None;
            for &(s, _) in waits[first..].iter().take_while(|w| w.1 == d) {
                g.add(g.dev_node[s] + 1, node, Kind::Sync, true)?;
                wait_end = wait_end.max(Some(devices[s].end));
            }
            let launch = l.launch[d].filter(|&h| {
                let t = hosts[h].ts;
                l.empty_at_launch[d]
                    && prev.is_none_or(|p| devices[p].end < t)
                    && wait_end.is_none_or(|w| w < t)
            });
            if let Some(h) = launch {
                g.add(g.host_node[h], node, Kind::Launch, false)?;
            } else if let Some(p) = prev.filter(|&p| wait_end.is_none_or(|w| w < devices[p].end)) {
                g.add(g.dev_node[p] + 1, node, Kind::KernelKernel, false)?;
            }
            prev = Some(d);
        }
    }
    for (d, h) in s.to_host {
        g.add(g.dev_node[d] + 1, g.host_node[h] + 1, Kind::Sync, true)?;
    }
    Ok(s.unresolved)
}

/// `per_queue`: kept device events per queue, sorted by (ts, index).
fn resolve(
    input: &StepGraphInput,
    l: &Launches,
    host_kept: &[bool],
    dev_kept: &[bool],
    per_queue: &BTreeMap<u32, Vec<usize>>,
) -> SyncEdges {
    let (hosts, devices, syncs) = (input.hosts, input.devices, input.syncs);
    let mut by_queue: HashMap<u32, LaunchList> = HashMap::new();
    let mut by_thread_queue: HashMap<(u32, u32), LaunchList> = HashMap::new();
    if syncs
        .iter()
        .any(|s| matches!(s, SyncRecord::Event { .. } | SyncRecord::StreamWait { .. }))
    {
        let mut all: Vec<(i64, usize, i64, usize)> = (0..devices.len())
            .filter_map(|d| l.launch[d].map(|h| (hosts[h].ts, h, devices[d].ts, d)))
            .collect();
        all.sort_unstable();
        for (ts, h, _, d) in all {
            by_queue
                .entry(devices[d].queue)
                .or_default()
                .push((ts, h, d));
            let key = (hosts[h].thread, devices[d].queue);
            by_thread_queue.entry(key).or_default().push((ts, h, d));
        }
    }
    let kept_call = |corr: i64| l.by_corr.get(&corr).copied().filter(|&h| host_kept[h]);
    // Last kept event on `queue` that started before `t`.
    let last_before = |queue: u32, t: i64| {
        let list = per_queue.get(&queue)?;
        let k = list.partition_point(|&d| devices[d].ts < t);
        k.checked_sub(1).map(|k| list[k])
    };
    // The event of the last launch on `queue` at or before the record call.
    let recorded = |record: i64, queue: u32| {
        let t = hosts[*l.by_corr.get(&record)?].ts;
        let list = by_queue.get(&queue)?;
        let k = list.partition_point(|x| x.0 <= t);
        k.checked_sub(1).map(|k| list[k].2).filter(|&d| dev_kept[d])
    };
    let mut out = SyncEdges::default();
    for s in syncs {
        match *s {
            SyncRecord::Stream {
                queue,
                call_correlation,
            } => {
                let Some(h) = kept_call(call_correlation) else {
                    continue;
                };
                match last_before(queue, hosts[h].end) {
                    Some(d) => out.to_host.push((d, h)),
                    None => out.unresolved += 1,
                }
            }
            SyncRecord::Device { call_correlation } => {
                let Some(h) = kept_call(call_correlation) else {
                    continue;
                };
                let before = out.to_host.len();
                for &q in per_queue.keys() {
                    if let Some(d) = last_before(q, hosts[h].end) {
                        out.to_host.push((d, h));
                    }
                }
                out.unresolved += usize::from(out.to_host.len() == before);
            }
            SyncRecord::Event {
                record_correlation,
                recorded_queue,
                call_correlation,
            } => {
                let Some(h) = kept_call(call_correlation) else {
                    continue;
                };
                match recorded(record_correlation, recorded_queue) {
                    Some(d) => out.to_host.push((d, h)),
                    None => out.unresolved += 1,
                }
            }
            SyncRecord::StreamWait {
                record_correlation,
                recorded_queue,
                waiting_queue,
                wait_call_correlation,
            } => {
                let Some(&w) = l.by_corr.get(&wait_call_correlation) else {
                    continue;
                };
                // Next launch on the wait call's thread onto the waiting queue.
                let dst = by_thread_queue
                    .get(&(hosts[w].thread, waiting_queue))
                    .and_then(|list| {
                        let k = list.partition_point(|x| x.0 < hosts[w].ts);
                        list[k..].iter().find(|x| x.1 != w).map(|x| x.2)
                    })
                    .filter(|&d| dev_kept[d]);
                match (recorded(record_correlation, recorded_queue), dst) {
                    (Some(s), Some(d)) if devices[s].queue != devices[d].queue => {
                        out.waits.push((s, d))
                    }
                    (Some(_), Some(_)) => {}
                    _ => out.unresolved += usize::from(host_kept[w]),
                }
            }
        }
    }
    out
}

/// Longest path by DP over a Kahn order (ready nodes by (ts, id)).
pub(super) fn longest_path(g: &Graph, nodes: usize) -> Result<CriticalPath, CpError> {
    let mut offsets = vec![0usize; nodes + 1];
    let mut indegree = vec![0u32; nodes];
    for e in &g.edges {
        offsets[e.from as usize + 1] += 1;
        indegree[e.to as usize] += 1;
    }
    for n in 0..nodes {
        offsets[n + 1] += offsets[n];
    }
    let mut fill = offsets.clone();
    let mut out = vec![0usize; g.edges.len()];
    for (i, e) in g.edges.iter().enumerate() {
        out[fill[e.from as usize]] = i;
        fill[e.from as usize] += 1;
    }
    let mut ready: BinaryHeap<Reverse<(i64, u32)>> = (0..nodes as u32)
        .filter(|&n| indegree[n as usize] == 0)
        .map(|n| Reverse((g.ts(n), n)))
        .collect();
    let mut dist = vec![0i64; nodes];
    let mut pred = vec![usize::MAX; nodes];
    let (mut ordered, mut best) = (0usize, None::<(i64, u32)>);
    while let Some(Reverse((_, u))) = ready.pop() {
        let u = u as usize;
        ordered += 1;
        if best.is_none_or(|b| dist[u] > b.0) {
            best = Some((dist[u], u as u32));
        }
        for &i in &out[offsets[u]..offsets[u + 1]] {
            let e = &g.edges[i];
            let v = e.to as usize;
            if pred[v] == usize::MAX || dist[u] + e.weight > dist[v] {
                (dist[v], pred[v]) = (dist[u] + e.weight, i);
            }
            indegree[v] -= 1;
            if indegree[v] == 0 {
                ready.push(Reverse((g.ts(e.to), e.to)));
            }
        }
    }
    if ordered < nodes {
        return Err(CpError::Cycle {
            unordered: nodes - ordered,
        });
    }
    let mut edges = Vec::new();
    let mut by_bound: Vec<(Bound, i64)> = Bound::ALL.iter().map(|&b| (b, 0)).collect();
    let mut at = best.map_or(NO_NODE, |b| b.1);
    while at != NO_NODE && pred[at as usize] != usize::MAX {
        let e = &g.edges[pred[at as usize]];
        let event = g.attribute(e);
        let bound = g.bound(e, event);
        by_bound[bound as usize].1 += e.weight;
        edges.push(PathEdge {
            bound,
            weight_ns: e.weight,
            event,
            from_ts: g.ts(e.from),
            to_ts: g.ts(e.to),
        });
        at = e.from;
    }
    edges.reverse();
    Ok(CriticalPath {
        length_ns: best.map_or(0, |b| b.0),
        edges,
        nodes,
        graph_edges: g.edges.len(),
        negative_weights_clamped: g.negatives,
        sync_edges: g.syncs,
        syncs_unresolved: 0,
        by_bound,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::critical_path_graph::*;
    use super::*;

    type Input = (
        Vec<HostEvent>,
        Vec<DeviceEvent>,
        Vec<SyncRecord>,
        (i64, i64),
    );

    /// Events, one per line or `;`-separated, as `alexnet_input.py` writes them;
    /// trailing fields may be omitted, `-` = none:
    /// `W start end`, `H thread ts end parent blocking corr name`,
    /// `D queue ts end corr class(C|N|M) name`, `SS queue call`, `SD call`,
    /// `SE record recorded_queue call`, `SW record recorded_queue waiting_queue call`.
    pub(crate) fn read(text: &str) -> Input {
        let (mut hosts, mut devices, mut syncs, mut window) = (vec![], vec![], vec![], (0, 1_000));
        for line in text.split(['\n', ';']) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let o = |i: usize| f.get(i).and_then(|s| s.parse::<i64>().ok());
            let (n, q) = (|i| o(i).unwrap_or(0), |i| o(i).unwrap_or(0) as u32);
            let class = match f.get(5) {
                Some(&"N") => DeviceClass::Communication,
                Some(&"M") => DeviceClass::Memory,
                _ => DeviceClass::Compute,
            };
            let (parent, blocking) = (o(4).map(|p| p as usize), f.get(5) == Some(&"1"));
            let host = HostEvent {
                thread: q(1),
                ts: n(2),
                end: n(3),
                parent,
                blocking,
                correlation: o(6),
                name: q(7),
            };
            let device = DeviceEvent {
                queue: q(1),
                ts: n(2),
                end: n(3),
                correlation: o(4),
                class,
                name: q(6),
            };
            match f.first().copied().unwrap_or("") {
                "W" => window = (n(1), n(2)),
                "H" => hosts.push(host),
                "D" => devices.push(device),
                "SS" => syncs.push(SyncRecord::Stream {
                    queue: q(1),
                    call_correlation: n(2),
                }),
                "SD" => syncs.push(SyncRecord::Device {
                    call_correlation: n(1),
                }),
                "SE" => syncs.push(SyncRecord::Event {
                    record_correlation: n(1),
                    recorded_queue: q(2),
                    call_correlation: n(3),
                }),
                "SW" => syncs.push(SyncRecord::StreamWait {
                    record_correlation: n(1),
                    recorded_queue: q(2),
                    waiting_queue: q(3),
                    wait_call_correlation: n(4),
                }),
                _ => {}
            }
        }
        (hosts, devices, syncs, window)
    }

    /// [`read`] then [`critical_path`] (window [0, 1000] unless `W`).
    pub(crate) fn run_with(text: &str, limits: CpLimits) -> Result<CriticalPath, CpError> {
        let (hosts, devices, syncs, window) = read(text);
        let input = StepGraphInput {
            hosts: &hosts,
            devices: &devices,
            syncs: &syncs,
            window,
        };
        critical_path(&input, &limits)
    }

    pub(crate) fn run(text: &str) -> Result<CriticalPath, CpError> {
        run_with(text, CpLimits::default())
    }

    /// "length: step step …", a step = bound letter + weight: C cpu, G compute,
    /// N communication, M memory, L launch, K kernel-kernel, D dependency/sync.
    pub(crate) fn path(cp: &Result<CriticalPath, CpError>) -> String {
        let Ok(cp) = cp else { return format!("{cp:?}") };
        let steps = cp
            .edges
            .iter()
            .map(|e| format!("{}{}", &"CGNMLKD"[e.bound as usize..][..1], e.weight_ns));
        format!("{}: {}", cp.length_ns, steps.collect::<Vec<_>>().join(" "))
    }

    #[test]
    fn queue_empty_only_when_nothing_else_is_outstanding() {
        // q0: launch 1 @0 → start 5; launches @10, @20 → starts 30, 40: K2 starts
        // with K3 queued (length 1), launch 3 finds K2 queued (length 2).
        // q1: starts at its own launch's ts (skew): still empty.
        let (hosts, devices, _, _) = read(
            "H 0 0 1 - 0 1; H 0 10 11 - 0 2; H 0 20 21 - 0 3;
            H 0 50 51 - 0 4; D 0 5 8 1; D 0 30 35 2; D 0 40 45 3; D 1 50 60 4",
        );
        let l = launches(&hosts, &devices);
        assert_eq!(l.launch, vec![Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(l.empty_at_launch, vec![true, false, false, true]);
    }

    #[test]
    fn busy_queue_gives_kernel_kernel_edge_empty_queue_a_launch_edge() {
        // L1[0,10]→K1[12,100]; L2[20,30]→K2[105,150] while K1 runs: K1.e→K2.s 5
        // (→ K1), no launch edge. Path 12 + 88 + 5 + 45 = 150. Edges: 2 host,
        // 1 dependency, 2 durations, launch, kernel-kernel.
        let two = "H 0 0 10 - 0 1; H 0 20 30 - 0 2; D 0 12 100 1; D 0 105 150 2";
        let cp = run(two);
        assert_eq!(path(&cp), "150: L12 G88 K5 G45");
        let cp = cp.unwrap();
        assert_eq!(
            (cp.edges[2].event, cp.graph_edges),
            (EventRef::Device(0), 7)
        );
        // L3[200,210]→K3[215,400] after K2 ended: launch edge, not K2.e→K3.s.
        // Path: L1 10 + dep + L2 10 + dep + launch 15 + K3 185 = 220.
        let cp = run(&format!("{two}; H 0 200 210 - 0 3; D 0 215 400 3"));
        assert_eq!(path(&cp), "220: C10 D0 C10 D0 L15 G185");
    }

    #[test]
    fn launches_then_device_sync_put_the_gpu_on_the_path() {
        // L1[0,10] L2[20,30] L3[40,50] launch K1[15,115] K2[120,220] K3[225,325] on q0;
        // S[60,400] cudaDeviceSynchronize; E[410,420]. K1: queue empty → launch 15.
        // K2 starts with L3 queued, L3 finds K2 queued → kernel-kernel gaps 5, 5.
        // Path: 15 + 100 + 5 + 100 + 5 + 100 + sync 0 + dep 0 + E 10 = 335.
        let cp = run(
            "H 0 0 10 - 0 1; H 0 20 30 - 0 2; H 0 40 50 - 0 3; H 0 60 400 - 1 4;
            H 0 410 420; D 0 15 115 1; D 0 120 220 2; D 0 225 325 3; SD 4",
        );
        assert_eq!(path(&cp), "335: L15 G100 K5 G100 K5 G100 D0 D0 C10");
        let cp = cp.unwrap();
        assert_eq!(
            (cp.by_bound[1].1, cp.sync_edges, cp.edges[6].to_ts),
            (300, 1, 400)
        );
    }

    #[test]
    fn sync_sources() {
        // Launches on q0 @0 and @20, on q1 @5; record (corr 9) @10 on q0; call
        // (corr 8) [30,90]. Event → the q0 event launched @0 (d0); stream q0 →
        // last start before 90 (d2); device → d2 and d1.
        let (hosts, devices, syncs, window) = read(
            "H 0 0 1 - 0 1; H 0 5 6 - 0 2; H 0 10 11 - 0 9;
            H 0 20 21 - 0 3; H 0 30 90 - 0 8; D 0 2 40 1; D 1 7 50 2; D 0 40 80 3;
            SE 9 0 8; SS 0 8; SD 8",
        );
        let input = StepGraphInput {
            hosts: &hosts,
            devices: &devices,
            syncs: &syncs,
            window,
        };
        let l = launches(&hosts, &devices);
        let per_queue = BTreeMap::from([(0, vec![0, 2]), (1, vec![1])]);
        let r = resolve(&input, &l, &[true; 5], &[true; 3], &per_queue);
        assert_eq!(
            (r.to_host, r.unresolved),
            (vec![(0, 4), (2, 4), (2, 4), (1, 4)], 0)
        );
    }

    #[test]
    fn stream_wait_joins_the_other_stream() {
        // Thread 1: L1[0,10]→K1 q1 [15,200], record R[12,14] (corr 10).
        // Thread 0: wait W[50,52] (corr 11, q0 waits on q1), L2[60,70]→K2 q0 [205,245].
        // Without the wait K2 gets launch edge 145; thread 1 wins: 15 + 185 = 200.
        // With it: K1.e→K2.s (0), no launch edge (K1 ended after L2): 15 + 185 + 0 + 40.
        let events = "H 1 0 10 - 0 1; H 1 12 14 - 0 10; H 0 50 52 - 0 11; H 0 60 70 - 0 2;
            D 1 15 200 1; D 0 205 245 2";
        assert_eq!(path(&run(events)), "200: L15 G185");
        let cp = run(&format!("{events}; SW 10 1 0 11"));
        assert_eq!(path(&cp), "240: L15 G185 D0 G40");
        assert_eq!(cp.map(|cp| cp.sync_edges), Ok(1));
    }

    #[test]
    fn event_sync_waits_for_the_recorded_work_only() {
        // L1[0,10]→K1 q0 [12,100]; record R[11,12] (corr 10); L2[13,15]→K2 q0 [100,150]
        // (kernel-kernel 0); E[20,105] cudaEventSynchronize (corr 11); X[110,200].
        // Event: K1.e→E.e: 12 + 88 + 0 + dep 0 + X 90 = 190. A stream sync
        // instead waits for K2 (last start before 105): 12 + 88 + 0 + 50 + 90 = 240.
        let events = "H 0 0 10 - 0 1; H 0 11 12 - 0 10; H 0 13 15 - 0 2; H 0 20 105 - 1 11;
            H 0 110 200; D 0 12 100 1; D 0 100 150 2";
        assert_eq!(
            path(&run(&format!("{events}; SE 10 0 11"))),
            "190: L12 G88 D0 D0 C90"
        );
        let cp = run(&format!("{events}; SS 0 11"));
        assert_eq!(path(&cp), "240: L12 G88 K0 G50 D0 D0 C90");
    }

    #[test]
    fn cycle_is_an_error() {
        // W[5,6] wait (q0 on q1), Ld[10,11]→Kd q0 [11,50], S[12,14] stream sync q0,
        // Ls[15,16]→Ks q1 [16,20], record R[17,18] on q1: Kd.s→Kd.e→S.e (sync)
        // →Ls.s→Ks.s (launch)→Ks.e→Kd.s (wait).
        let cp = run(
            "H 0 5 6 - 0 100; H 0 10 11 - 0 1; H 0 12 14 - 1 101; H 0 15 16 - 0 2;
            H 0 17 18 - 0 102; D 0 11 50 1; D 1 16 20 2; SW 102 1 0 100; SS 0 101",
        );
        assert!(matches!(cp, Err(CpError::Cycle { .. })));
    }

    /// HTA 0.5.0 (pandas-3 fixes) on hta_alexnet_a100, window
    /// `[param|pytorch.model.alex_net|0|0|0|measure|forward]` #0: 78,776 µs,
    /// cpu 74,984 (95.19 %), compute 3,712 (memcpy included), kernel-kernel 50,
    /// launch 30; 440 nodes, 443 edges, 5 sync edges, 170 path edges.
    #[test]
    fn alexnet_matches_hta() {
        let path = std::env::var("CP_ALEXNET").ok();
        let Some(text) = path.and_then(|p| std::fs::read_to_string(p).ok()) else {
            return eprintln!("CP_ALEXNET unset or unreadable: skipped");
        };
        let cp = run(&text).unwrap();
        let by = |b: Bound| cp.by_bound[b as usize].1;
        let gpu = by(Bound::GpuCompute) + by(Bound::GpuMemory);
        assert_eq!(
            (cp.length_ns, by(Bound::Cpu), gpu),
            (78_776_000, 74_984_000, 3_712_000)
        );
        let delays = (by(Bound::KernelKernelDelay), by(Bound::KernelLaunchDelay));
        assert_eq!(delays, (50_000, 30_000));
        let counts = (cp.nodes, cp.graph_edges, cp.sync_edges, cp.edges.len());
        assert_eq!(counts, (440, 443, 5, 170));
    }
}
