//! The kinds of XSpace planes, lines and host runtime calls, from their
//! names, by the conventions of XLA/TSL's `xplane_schema` (`/host:CPU`,
//! `/device:GPU:N`, `XLA Ops`, `Stream #N(...)`, …) and of the CUDA/HIP
//! runtime API names (`hipLaunchKernel`, `cuMemcpyHtoDAsync`, …).

use super::space::Line;
/// What a plane holds, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneKind {
    /// `/host:CPU`: host threads (TraceMe, Python tracer, runtime calls).
    HostThreads,
    /// `/host:CUPTI`, `/host:ROCTRACER`, `/host:NVTX-CUPTI`: host API traces.
    HostApiTrace,
    /// `/host:python-tracer`.
    HostPythonTracer,
    /// `/host:metadata`: HLO protos and versions, no timeline.
    HostMetadata,
    /// Any other `/host:` plane.
    HostOther,
    /// `/device:GPU:N`.
    Gpu {
        ordinal: Option<u32>,
    },
    /// `/device:TPU:N` (also its SparseCore planes).
    Tpu {
        ordinal: Option<u32>,
    },
    /// `/device:CUSTOM:…`.
    CustomDevice,
    /// `Task Environment`: profile start/stop times and options.
    TaskEnvironment,
    Other,
}

impl PlaneKind {
    /// The kind of the plane named `name`.
    pub fn of_name(name: &str) -> PlaneKind {
        if let Some(rest) = name.strip_prefix("/device:GPU:") {
            PlaneKind::Gpu {
                ordinal: leading_number(rest),
            }
        } else if let Some(rest) = name.strip_prefix("/device:TPU:") {
            PlaneKind::Tpu {
                ordinal: leading_number(rest),
            }
        } else if name.starts_with("/device:CUSTOM:") {
            PlaneKind::CustomDevice
        } else if name == "Task Environment" {
            PlaneKind::TaskEnvironment
        } else {
            match name {
                "/host:CPU" => PlaneKind::HostThreads,
                "/host:CUPTI" | "/host:ROCTRACER" | "/host:NVTX-CUPTI" => PlaneKind::HostApiTrace,
                "/host:python-tracer" => PlaneKind::HostPythonTracer,
                "/host:metadata" => PlaneKind::HostMetadata,
                _ if name.starts_with("/host:") => PlaneKind::HostOther,
                _ => PlaneKind::Other,
            }
        }
    }

    /// Whether events on this plane ran on a device.
    pub fn is_device(self) -> bool {
        matches!(
            self,
            PlaneKind::Gpu { .. } | PlaneKind::Tpu { .. } | PlaneKind::CustomDevice
        )
    }

    /// The device ordinal in the plane name.
    pub fn device_ordinal(self) -> Option<u32> {
        match self {
            PlaneKind::Gpu { ordinal } | PlaneKind::Tpu { ordinal } => ordinal,
            _ => None,
        }
    }
}

/// The decimal number `text` starts with (`"3 SparseCore 1"` → 3).
fn leading_number(text: &str) -> Option<u32> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text.get(..end)?.parse().ok()
}

/// What a line holds, from its name and its plane's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A host thread (any line of a host plane).
    HostThread,
    /// `Stream #N(...)`: device activity on stream N.
    Stream {
        stream_id: Option<i64>,
    },
    /// `XLA Ops` (also `Sparse Core Ops`).
    XlaOps,
    /// `Async XLA Ops`.
    AsyncXlaOps,
    /// `XLA Modules` (also `Sparse Core Modules`).
    XlaModules,
    /// `Steps` (also `Sparse Core Steps`).
    Steps,
    /// `Framework Ops`, `Framework Name Scope`.
    FrameworkOps,
    /// `Launch Stats`.
    LaunchStats,
    /// `_counters_`.
    Counters,
    Other,
}

impl LineKind {
    /// The kind of `line` on a plane of kind `plane`.
    pub fn of(plane: PlaneKind, line: &Line<'_>) -> LineKind {
        let name = &*line.name;
        if !plane.is_device() {
            return match plane {
                PlaneKind::HostThreads
                | PlaneKind::HostApiTrace
                | PlaneKind::HostPythonTracer
                | PlaneKind::HostOther => LineKind::HostThread,
                _ => LineKind::Other,
            };
        }
        if let Some(rest) = name.strip_prefix("Stream #") {
            let from_name = rest
                .find(|c: char| !c.is_ascii_digit())
                .map_or(rest, |end| rest.get(..end).unwrap_or_default())
                .parse()
                .ok();
            return LineKind::Stream {
                stream_id: from_name.or(Some(line.id)),
            };
        }
        match name {
            "XLA Ops" | "Sparse Core Ops" => LineKind::XlaOps,
            "Async XLA Ops" => LineKind::AsyncXlaOps,
            "XLA Modules" | "Sparse Core Modules" => LineKind::XlaModules,
            "Steps" | "Sparse Core Steps" => LineKind::Steps,
            "Framework Ops" | "Framework Name Scope" => LineKind::FrameworkOps,
            "Launch Stats" => LineKind::LaunchStats,
            "_counters_" => LineKind::Counters,
            _ => LineKind::Other,
        }
    }
}

/// What a host runtime call does, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuntimeCall {
    KernelLaunch,
    GraphLaunch,
    Memcpy,
    Memset,
    Synchronize,
    Memory,
    Other,
}

impl RuntimeCall {
    /// The kind of the runtime API function `name` (`hipLaunchKernel`,
    /// `cuMemcpyHtoDAsync`, `cudaStreamSynchronize`, …).
    pub fn of_name(name: &str) -> RuntimeCall {
        let has = |part: &str| contains_ignore_ascii_case(name, part);
        if has("graphlaunch") {
            RuntimeCall::GraphLaunch
        } else if has("launch") {
            RuntimeCall::KernelLaunch
        } else if has("memcpy") {
            RuntimeCall::Memcpy
        } else if has("memset") {
            RuntimeCall::Memset
        } else if has("synchronize") || has("wait") {
            RuntimeCall::Synchronize
        } else if has("alloc") || has("free") {
            RuntimeCall::Memory
        } else {
            RuntimeCall::Other
        }
    }
}

/// Whether `haystack` contains `needle` (ASCII lowercase), ignoring ASCII
/// case, without allocating.
pub fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    let needle = needle.as_bytes();
    needle.is_empty()
        || haystack
            .as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}
