//! The critical path's data model: what goes in (host and device events,
//! sync records, the window), what comes out (path edges by bound), and the
//! graph both sides of the construction share ([`super::critical_path_graph`]
//! builds host edges and runs it; [`super::critical_path_sync`] adds device
//! and sync edges and finds the longest path).

use std::fmt;

/// What an edge on the path is bound by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bound {
    Cpu,
    GpuCompute,
    GpuCommunication,
    GpuMemory,
    KernelLaunchDelay,
    KernelKernelDelay,
    Dependency,
}

impl Bound {
    pub const ALL: [Bound; 7] = [
        Bound::Cpu,
        Bound::GpuCompute,
        Bound::GpuCommunication,
        Bound::GpuMemory,
        Bound::KernelLaunchDelay,
        Bound::KernelKernelDelay,
        Bound::Dependency,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceClass {
    Compute,
    Communication,
    Memory,
}

/// cpu_op, runtime or driver call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostEvent {
    pub thread: u32,
    pub ts: i64,
    pub end: i64,
    /// Index into the hosts slice, same thread.
    pub parent: Option<usize>,
    /// A wait that is not CPU work (HTA: cudaDeviceSynchronize,
    /// cudaStreamSynchronize, cudaEventQuery, cudaEventSynchronize,
    /// cudaMemcpy, cudaMemcpyAsync).
    pub blocking: bool,
    pub correlation: Option<i64>,
    pub name: u32,
}

/// Kernel, copy or set; not sync records (those are [`SyncRecord`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceEvent {
    /// (device, stream), interned.
    pub queue: u32,
    pub ts: i64,
    pub end: i64,
    pub correlation: Option<i64>,
    pub class: DeviceClass,
    pub name: u32,
}

/// A sync record (Kineto `cuda_sync`, Nsight sync rows), by correlation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRecord {
    /// cudaStreamSynchronize.
    Stream { queue: u32, call_correlation: i64 },
    /// cudaDeviceSynchronize (Context Sync).
    Device { call_correlation: i64 },
    /// cudaEventSynchronize; `recorded_queue` = Kineto `wait_on_stream`.
    Event {
        record_correlation: i64,
        recorded_queue: u32,
        call_correlation: i64,
    },
    /// cudaStreamWaitEvent: `waiting_queue` waits for `recorded_queue`.
    StreamWait {
        record_correlation: i64,
        recorded_queue: u32,
        waiting_queue: u32,
        wait_call_correlation: i64,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct StepGraphInput<'a> {
    pub hosts: &'a [HostEvent],
    pub devices: &'a [DeviceEvent],
    pub syncs: &'a [SyncRecord],
    /// Inclusive `[start, end]`.
    pub window: (i64, i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventRef {
    Host(usize),
    Device(usize),
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathEdge {
    pub bound: Bound,
    pub weight_ns: i64,
    /// The host or device event the edge's time is attributed to.
    pub event: EventRef,
    pub from_ts: i64,
    pub to_ts: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CriticalPath {
    pub length_ns: i64,
    pub edges: Vec<PathEdge>,
    pub nodes: usize,
    pub graph_edges: usize,
    pub negative_weights_clamped: usize,
    pub sync_edges: usize,
    /// Syncs with their call in the window whose device side was not found.
    pub syncs_unresolved: usize,
    /// Σ weight per bound along the path, every bound in [`Bound::ALL`] order.
    pub by_bound: Vec<(Bound, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpLimits {
    pub max_nodes: usize,
    pub max_edges: usize,
}

impl Default for CpLimits {
    fn default() -> Self {
        CpLimits {
            max_nodes: 4_000_000,
            max_edges: 16_000_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpError {
    TooManyNodes {
        nodes: usize,
        limit: usize,
    },
    TooManyEdges {
        limit: usize,
    },
    /// Parent out of range, on another thread, or in a parent cycle.
    BadParent {
        host: usize,
    },
    /// Nodes left unordered by the topological sort.
    Cycle {
        unordered: usize,
    },
}

impl fmt::Display for CpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "critical path: {self:?}")
    }
}

impl std::error::Error for CpError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Operator,
    Dependency,
    Launch,
    KernelKernel,
    Sync,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Edge {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) weight: i64,
    pub(super) kind: Kind,
}

pub(super) const NO_NODE: u32 = u32::MAX;

/// Node `2k`/`2k + 1` = start/end of kept event `k` (hosts, then devices).
pub(super) struct Graph<'a> {
    pub(super) input: &'a StepGraphInput<'a>,
    pub(super) hosts_kept: Vec<usize>,
    pub(super) devs_kept: Vec<usize>,
    pub(super) host_node: Vec<u32>,
    pub(super) dev_node: Vec<u32>,
    pub(super) edges: Vec<Edge>,
    pub(super) max_edges: usize,
    pub(super) negatives: usize,
    pub(super) syncs: usize,
}

impl Graph<'_> {
    fn event(&self, n: u32) -> EventRef {
        let k = n as usize / 2;
        match k < self.hosts_kept.len() {
            true => EventRef::Host(self.hosts_kept[k]),
            false => EventRef::Device(self.devs_kept[k - self.hosts_kept.len()]),
        }
    }

    pub(super) fn ts(&self, n: u32) -> i64 {
        let start = n.is_multiple_of(2);
        match (self.event(n), start) {
            (EventRef::Host(h), true) => self.input.hosts[h].ts,
            (EventRef::Host(h), false) => self.input.hosts[h].end,
            (EventRef::Device(d), true) => self.input.devices[d].ts,
            (EventRef::Device(d), false) => self.input.devices[d].end,
            (EventRef::None, _) => 0,
        }
    }

    pub(super) fn add(
        &mut self,
        from: u32,
        to: u32,
        kind: Kind,
        zero: bool,
    ) -> Result<(), CpError> {
        if self.edges.len() >= self.max_edges {
            return Err(CpError::TooManyEdges {
                limit: self.max_edges,
            });
        }
        let mut weight = match zero || matches!(kind, Kind::Dependency | Kind::Sync) {
            true => 0,
            false => self.ts(to) - self.ts(from),
        };
        if weight < 0 {
            self.negatives += 1;
            weight = 0;
        }
        self.syncs += usize::from(kind == Kind::Sync);
        self.edges.push(Edge {
            from,
            to,
            weight,
            kind,
        });
        Ok(())
    }

    pub(super) fn attribute(&self, e: &Edge) -> EventRef {
        match e.kind {
            Kind::KernelKernel => self.event(e.from),
            Kind::Operator if e.from.is_multiple_of(2) => self.event(e.from),
            Kind::Operator if !e.to.is_multiple_of(2) => self.event(e.to),
            Kind::Operator => match self.event(e.from) {
                EventRef::Host(h) => match self.input.hosts[h].parent {
                    Some(p) if self.host_node[p] != NO_NODE => EventRef::Host(p),
                    _ => EventRef::None,
                },
                other => other,
            },
            _ => EventRef::None,
        }
    }

    pub(super) fn bound(&self, e: &Edge, attributed: EventRef) -> Bound {
        match (e.kind, attributed) {
            (Kind::Launch, _) => Bound::KernelLaunchDelay,
            (Kind::KernelKernel, _) => Bound::KernelKernelDelay,
            (Kind::Dependency | Kind::Sync, _) => Bound::Dependency,
            (Kind::Operator, EventRef::Device(d)) => match self.input.devices[d].class {
                DeviceClass::Compute => Bound::GpuCompute,
                DeviceClass::Communication => Bound::GpuCommunication,
                DeviceClass::Memory => Bound::GpuMemory,
            },
            (Kind::Operator, _) => Bound::Cpu,
        }
    }
}
