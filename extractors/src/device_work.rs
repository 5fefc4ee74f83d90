//! Which `trace_events` rows are accelerator work and which host calls
//! launch it — one definition, shared by the extraction-time reductions
//! ([`crate::stream_gaps`]) and the recipes' DataFusion predicates, so the
//! two cannot drift apart silently (a test compares them on real traces).

/// Runtime/driver calls that launch one kernel directly.
pub const DIRECT_LAUNCHES: &[&str] = &[
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaLaunchCooperativeKernel",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "hipLaunchKernel",
    "hipExtLaunchKernel",
    "hipModuleLaunchKernel",
];

/// Upper bounds (ns, exclusive) of the gap histogram buckets; the last
/// bucket has no upper bound.
pub const GAP_BUCKETS_NS: [i64; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The histogram bucket of a strictly positive gap.
pub fn gap_bucket(gap_ns: i64) -> usize {
    GAP_BUCKETS_NS
        .iter()
        .position(|&upper| gap_ns < upper)
        .unwrap_or(GAP_BUCKETS_NS.len())
}

/// Categories of device kernel rows: Kineto's and Nsight's `kernel`
/// (`Kernel` in older Kineto), rocprofv3's `kernel_dispatch`.
pub const KERNEL_CATEGORIES: &[&str] = &["kernel", "Kernel", "kernel_dispatch"];

/// A device kernel as the summaries count it: `kind = kernel`, or an NCCL /
/// RCCL kernel recorded as `communication` on a stream with a kernel
/// category.
pub fn is_kernel(kind: &str, category: Option<&str>, has_stream: bool) -> bool {
    kind == "kernel"
        || (kind == "communication"
            && has_stream
            && category.is_some_and(|c| KERNEL_CATEGORIES.contains(&c)))
}

/// How a direct-launch name matches [`DIRECT_LAUNCHES`]: exactly, or as an
/// nsys versioned inner call (`cudaLaunchKernel_v7000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchName {
    Plain,
    Versioned,
}

/// Whether a runtime/driver call name launches a kernel directly.
pub fn direct_launch_name(name: &str) -> Option<LaunchName> {
    DIRECT_LAUNCHES.iter().find_map(|launch| {
        if name == *launch {
            Some(LaunchName::Plain)
        } else if name
            .strip_prefix(launch)
            .is_some_and(|rest| rest.starts_with("_v"))
        {
            Some(LaunchName::Versioned)
        } else {
            None
        }
    })
}

/// Whether a row kind is a host runtime or driver API call.
pub fn is_host_api(kind: &str) -> bool {
    matches!(kind, "runtime_api" | "driver_api")
}

/// A host-side graph launch (device-side graph executions sit on streams).
pub fn is_host_graph_launch(kind: &str, has_stream: bool) -> bool {
    kind == "graph_launch" && !has_stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_names_match_plain_and_versioned_only() {
        assert_eq!(
            direct_launch_name("cudaLaunchKernel"),
            Some(LaunchName::Plain)
        );
        assert_eq!(
            direct_launch_name("cudaLaunchKernel_v7000"),
            Some(LaunchName::Versioned)
        );
        assert_eq!(direct_launch_name("cudaLaunchKernelExC_v11060"), {
            Some(LaunchName::Versioned)
        });
        assert_eq!(direct_launch_name("cudaLaunchKernelX"), None);
        assert_eq!(direct_launch_name("cudaMemcpyAsync"), None);
    }

    #[test]
    fn gap_buckets_are_half_open() {
        assert_eq!(gap_bucket(1), 0);
        assert_eq!(gap_bucket(999), 0);
        assert_eq!(gap_bucket(1_000), 1);
        assert_eq!(gap_bucket(9_999_999), 4);
        assert_eq!(gap_bucket(10_000_000), 5);
    }

    #[test]
    fn nccl_kernels_count_only_on_a_stream_with_a_kernel_category() {
        assert!(is_kernel("kernel", None, false));
        assert!(is_kernel("communication", Some("kernel"), true));
        assert!(!is_kernel("communication", Some("kernel"), false));
        assert!(!is_kernel("communication", Some("user_annotation"), true));
    }
}
