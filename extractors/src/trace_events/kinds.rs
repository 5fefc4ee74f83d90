//! Normalized event kinds for Chrome / Kineto events, in one table.
//!
//! Producers spell the same class differently (`cuda_runtime` in Kineto,
//! `Runtime` in the 2021 schema, `hip*` names on ROCm). Recipes filter on the
//! normalized `kind`, so the mapping is kept here, table-driven, and nowhere
//! else.

/// The normalized class of a `trace_events` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EventKind {
    CpuSlice,
    PythonFunction,
    CpuOp,
    UserAnnotation,
    RuntimeApi,
    DriverApi,
    Kernel,
    Memcpy,
    Memset,
    Sync,
    GraphLaunch,
    Instant,
    GpuUserAnnotation,
    Communication,
    /// A task running on a CPU (Perfetto `sched_switch`).
    SchedSlice,
    /// A thread's scheduling state between switches (runnable, sleeping, …).
    ThreadState,
    /// An NVTX push/pop or start/end range (Nsight Systems).
    NvtxRange,
    /// A traced OS runtime call: `poll`, `ioctl`, `write`, `sem_wait`, …
    /// (Nsight Systems `OSRT_API`).
    OsRuntime,
    /// The profiler's own recording span (Kineto's `PyTorch Profiler (N)`,
    /// category `Trace`): it covers the whole trace and is no work, so it
    /// stays out of the call-stack reductions.
    ProfilerSpan,
    /// A hard interrupt handler or softirq running on a CPU ahead of its
    /// task (ftrace `irq_handler_*`, `softirq_*`): no thread's, no frame.
    Interrupt,
}

impl EventKind {
    /// Every kind, in code order (`kind as u8` is the index).
    pub const ALL: [EventKind; 20] = [
        EventKind::CpuSlice,
        EventKind::PythonFunction,
        EventKind::CpuOp,
        EventKind::UserAnnotation,
        EventKind::RuntimeApi,
        EventKind::DriverApi,
        EventKind::Kernel,
        EventKind::Memcpy,
        EventKind::Memset,
        EventKind::Sync,
        EventKind::GraphLaunch,
        EventKind::Instant,
        EventKind::GpuUserAnnotation,
        EventKind::Communication,
        EventKind::SchedSlice,
        EventKind::ThreadState,
        EventKind::NvtxRange,
        EventKind::OsRuntime,
        EventKind::ProfilerSpan,
        EventKind::Interrupt,
    ];

    /// The kind whose `kind as u8` is `code` (a new variant must join
    /// [`EventKind::ALL`]: the assertion below fails to compile otherwise).
    pub fn from_code(code: u8) -> Option<EventKind> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// The value written to the `kind` column.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::CpuSlice => "cpu_slice",
            EventKind::PythonFunction => "python_function",
            EventKind::CpuOp => "cpu_op",
            EventKind::UserAnnotation => "user_annotation",
            EventKind::RuntimeApi => "runtime_api",
            EventKind::DriverApi => "driver_api",
            EventKind::Kernel => "kernel",
            EventKind::Memcpy => "memcpy",
            EventKind::Memset => "memset",
            EventKind::Sync => "sync",
            EventKind::GraphLaunch => "graph_launch",
            EventKind::Instant => "instant",
            EventKind::GpuUserAnnotation => "gpu_user_annotation",
            EventKind::Communication => "communication",
            EventKind::SchedSlice => "sched_slice",
            EventKind::ThreadState => "thread_state",
            EventKind::NvtxRange => "nvtx_range",
            EventKind::OsRuntime => "os_runtime",
            EventKind::ProfilerSpan => "profiler_span",
            EventKind::Interrupt => "interrupt",
        }
    }

    /// Host-side calls that launch device work (their correlation ids and
    /// phases are inherited by the device activity they launch).
    pub fn is_launch(self) -> bool {
        matches!(
            self,
            EventKind::RuntimeApi | EventKind::DriverApi | EventKind::GraphLaunch
        )
    }

    /// Whether slices of this kind are frames of the stack reductions:
    /// the profiler's own span is not, nor are the rows that say where a
    /// thread ran or what interrupted a CPU rather than what code did.
    pub fn in_stacks(self) -> bool {
        !matches!(
            self,
            EventKind::ProfilerSpan
                | EventKind::SchedSlice
                | EventKind::ThreadState
                | EventKind::Interrupt
        )
    }

    /// Frame language for the stack reductions.
    pub fn language(self) -> &'static str {
        match self {
            EventKind::PythonFunction => "python",
            EventKind::Kernel | EventKind::Memcpy | EventKind::Memset => "kernel",
            _ => "unknown",
        }
    }
}

/// What a category says about an event, before its name is considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CategoryClass {
    Fixed(EventKind),
    Runtime,
    Driver,
    Kernel,
}

/// Category (compared case-insensitively) → class. Device activity is marked
/// by the second field: it runs on a GPU stream track.
const CATEGORY_TABLE: [(&str, CategoryClass, bool); 16] = [
    ("cpu_op", CategoryClass::Fixed(EventKind::CpuOp), false),
    ("operator", CategoryClass::Fixed(EventKind::CpuOp), false),
    (
        "python_function",
        CategoryClass::Fixed(EventKind::PythonFunction),
        false,
    ),
    (
        "user_annotation",
        CategoryClass::Fixed(EventKind::UserAnnotation),
        false,
    ),
    (
        "gpu_user_annotation",
        CategoryClass::Fixed(EventKind::GpuUserAnnotation),
        true,
    ),
    ("cuda_runtime", CategoryClass::Runtime, false),
    ("runtime", CategoryClass::Runtime, false),
    ("cuda_driver", CategoryClass::Driver, false),
    ("kernel", CategoryClass::Kernel, true),
    ("gpu_memcpy", CategoryClass::Fixed(EventKind::Memcpy), true),
    ("memcpy", CategoryClass::Fixed(EventKind::Memcpy), true),
    ("gpu_memset", CategoryClass::Fixed(EventKind::Memset), true),
    ("memset", CategoryClass::Fixed(EventKind::Memset), true),
    ("cuda_sync", CategoryClass::Fixed(EventKind::Sync), false),
    ("mtia_runtime", CategoryClass::Runtime, false),
    (
        "os_runtime",
        CategoryClass::Fixed(EventKind::OsRuntime),
        false,
    ),
];

/// The classification of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    pub kind: EventKind,
    /// The event is device activity or a device-side annotation: its track
    /// is a GPU stream.
    pub on_device: bool,
    /// Kernel, memcpy or memset (inherits phase and correlation from its launch).
    pub device_activity: bool,
}

fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// A device kernel's kind by its name: NCCL / RCCL kernels are
/// `communication`, every other kernel `kernel` (every format's kernels).
pub fn kernel_kind(name: &str) -> EventKind {
    if contains_ignore_case(name, "nccl") || contains_ignore_case(name, "rccl") {
        EventKind::Communication
    } else {
        EventKind::Kernel
    }
}

/// Classifies an event by category and name; `instant` for instant phases.
pub fn classify(category: Option<&str>, name: &str, instant: bool) -> Classified {
    let row = category.and_then(|c| {
        CATEGORY_TABLE
            .iter()
            .find(|(k, _, _)| c.eq_ignore_ascii_case(k))
    });
    let on_device = row.is_some_and(|r| r.2);
    let communication_name = name == "record_param_comms" || name.starts_with("nccl:");
    let kind = match row.map(|r| r.1) {
        _ if communication_name => EventKind::Communication,
        Some(CategoryClass::Fixed(kind)) => kind,
        Some(CategoryClass::Runtime) | Some(CategoryClass::Driver)
            if name.ends_with("GraphLaunch") =>
        {
            EventKind::GraphLaunch
        }
        Some(CategoryClass::Runtime) => EventKind::RuntimeApi,
        Some(CategoryClass::Driver) => EventKind::DriverApi,
        Some(CategoryClass::Kernel) => kernel_kind(name),
        None if instant => EventKind::Instant,
        None if category == Some("Trace") && name.starts_with("PyTorch Profiler") => {
            EventKind::ProfilerSpan
        }
        None => EventKind::CpuSlice,
    };
    let kind = if instant && !on_device {
        EventKind::Instant
    } else {
        kind
    };
    let device_activity = on_device
        && matches!(
            row.map(|r| r.1),
            Some(CategoryClass::Kernel)
                | Some(CategoryClass::Fixed(EventKind::Memcpy))
                | Some(CategoryClass::Fixed(EventKind::Memset))
        );
    Classified {
        kind,
        on_device,
        device_activity,
    }
}

const _: () = assert!(EventKind::Interrupt as usize + 1 == EventKind::ALL.len());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_every_kind_in_order() {
        for (code, kind) in EventKind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, code);
            assert_eq!(EventKind::from_code(code as u8), Some(*kind));
        }
        assert_eq!(EventKind::from_code(EventKind::ALL.len() as u8), None);
    }

    #[test]
    fn mapping_table() {
        let k = |cat: Option<&str>, name: &str| classify(cat, name, false).kind;
        assert_eq!(
            k(Some("Trace"), "PyTorch Profiler (0)"),
            EventKind::ProfilerSpan
        );
        assert_eq!(k(Some("Trace"), "my span"), EventKind::CpuSlice);
        assert!(!EventKind::ProfilerSpan.in_stacks() && EventKind::CpuSlice.in_stacks());
        assert_eq!(k(Some("cpu_op"), "aten::mm"), EventKind::CpuOp);
        assert_eq!(k(Some("Operator"), "aten::mm"), EventKind::CpuOp);
        assert_eq!(
            k(Some("cuda_runtime"), "cudaLaunchKernel"),
            EventKind::RuntimeApi
        );
        assert_eq!(
            k(Some("Runtime"), "cudaGraphLaunch"),
            EventKind::GraphLaunch
        );
        assert_eq!(
            k(Some("cuda_runtime"), "hipGraphLaunch"),
            EventKind::GraphLaunch
        );
        assert_eq!(
            k(Some("cuda_driver"), "cuLaunchKernel"),
            EventKind::DriverApi
        );
        assert_eq!(k(Some("Kernel"), "sgemm"), EventKind::Kernel);
        assert_eq!(
            k(Some("kernel"), "ncclKernel_AllReduce"),
            EventKind::Communication
        );
        assert_eq!(k(Some("kernel"), "RCCL_x"), EventKind::Communication);
        assert_eq!(k(Some("gpu_memcpy"), "Memcpy HtoD"), EventKind::Memcpy);
        assert_eq!(k(Some("Memset"), "Memset"), EventKind::Memset);
        assert_eq!(k(Some("cuda_sync"), "Stream Sync"), EventKind::Sync);
        assert_eq!(
            k(Some("user_annotation"), "nccl:all_reduce"),
            EventKind::Communication
        );
        assert_eq!(
            k(Some("cpu_op"), "record_param_comms"),
            EventKind::Communication
        );
        assert_eq!(k(None, "foo"), EventKind::CpuSlice);
        assert_eq!(k(Some("v8"), "foo"), EventKind::CpuSlice);
        assert_eq!(classify(Some("v8"), "mark", true).kind, EventKind::Instant);
        assert!(classify(Some("kernel"), "k", false).device_activity);
        assert!(!classify(Some("gpu_user_annotation"), "k", false).device_activity);
        assert!(classify(Some("gpu_user_annotation"), "k", false).on_device);
    }
}
