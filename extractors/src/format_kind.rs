//! The identity of an input format: the kind every layer names (artifact
//! records, `--kind`, summaries) and its stable name. A leaf: the registry
//! ([`crate::formats`]) and every extractor name kinds from here.

/// The input formats flameox knows about: each has one descriptor in the
/// registry ([`crate::formats::FORMATS`]) except `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatKind {
    ChromeJson,
    SpeedscopeJson,
    ChromeCpuProfile,
    GeckoProfile,
    FoldedStacks,
    PerfettoProtobuf,
    Pprof,
    NsightSqlite,
    /// A folder from `nsys export --type parquetdir` (detected by
    /// [`crate::nsight::export_dir`], never from one file's head).
    NsightParquetDir,
    /// A folder from `nsys export --type arrowdir`.
    NsightArrowDir,
    NsightReport,
    Sqlite,
    /// pyperf JSON results (see [`crate::benchmarks::pyperf`]).
    PyperfJson,
    /// hyperfine `--export-json` (see [`crate::benchmarks::hyperfine`]).
    HyperfineJson,
    /// Google Benchmark JSON (see [`crate::benchmarks::gbench`]).
    GoogleBenchmarkJson,
    /// A criterion output folder (found by
    /// [`crate::benchmarks::criterion::criterion_members`]; one of its files
    /// alone is recognized only to say so).
    CriterionDir,
    /// `python -X importtime` output (see [`crate::importtime`]).
    PythonImportTime,
    /// coverage.py's JSON report (see [`crate::coverage_json`]).
    CoverageJson,
    /// A JUnit XML test report (see [`crate::junit_xml`]).
    JunitXml,
    /// OpenTelemetry OTLP/JSON traces and metrics (see [`crate::otlp`]).
    OtlpJson,
    /// flameox configuration observations (see
    /// [`crate::configuration_observations`]).
    ConfigurationObservations,
    /// The output of a `merged_stacks` reduction (see
    /// [`crate::reduced_stacks`]).
    ReducedStacks,
    /// XPlane / XSpace protobuf (see [`crate::xplane`]): recognised, refused.
    XPlane,
    /// Linux ftrace text (see [`crate::ftrace_text`]).
    FtraceText,
    /// trace-cmd `.dat` (see [`crate::trace_cmd`]).
    TraceCmd,
    /// Linux `perf record` output (see [`crate::perf_data`]).
    PerfData,
    /// A memray capture (see [`crate::memray`]).
    Memray,
    /// A Go execution trace (see [`crate::go_trace`]).
    GoTrace,
    /// AMD rocprofiler-sdk JSON (see [`crate::rocprof`]).
    RocprofJson,
    /// One rocprofv3 CSV table (see [`crate::rocprof::csv_output`]).
    RocprofCsv,
    /// A rocprofv3 CSV output folder (found by
    /// [`crate::rocprof::csv_tables::is_rocprof_csv_folder`]).
    RocprofCsvDir,
    Unknown,
}

impl FormatKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FormatKind; 32] = [
        FormatKind::ChromeJson,
        FormatKind::SpeedscopeJson,
        FormatKind::ChromeCpuProfile,
        FormatKind::GeckoProfile,
        FormatKind::FoldedStacks,
        FormatKind::PerfettoProtobuf,
        FormatKind::Pprof,
        FormatKind::NsightSqlite,
        FormatKind::NsightParquetDir,
        FormatKind::NsightArrowDir,
        FormatKind::NsightReport,
        FormatKind::Sqlite,
        FormatKind::PyperfJson,
        FormatKind::HyperfineJson,
        FormatKind::GoogleBenchmarkJson,
        FormatKind::CriterionDir,
        FormatKind::PythonImportTime,
        FormatKind::CoverageJson,
        FormatKind::JunitXml,
        FormatKind::OtlpJson,
        FormatKind::ConfigurationObservations,
        FormatKind::ReducedStacks,
        FormatKind::XPlane,
        FormatKind::FtraceText,
        FormatKind::TraceCmd,
        FormatKind::PerfData,
        FormatKind::Memray,
        FormatKind::GoTrace,
        FormatKind::RocprofJson,
        FormatKind::RocprofCsv,
        FormatKind::RocprofCsvDir,
        FormatKind::Unknown,
    ];

    /// The stable snake_case name (used by `--kind` and in summaries).
    pub fn name(&self) -> &'static str {
        match self {
            FormatKind::ChromeJson => "chrome_json",
            FormatKind::SpeedscopeJson => "speedscope_json",
            FormatKind::ChromeCpuProfile => "chrome_cpuprofile",
            FormatKind::GeckoProfile => "gecko_profile",
            FormatKind::FoldedStacks => "folded_stacks",
            FormatKind::PerfettoProtobuf => "perfetto_protobuf",
            FormatKind::Pprof => "pprof",
            FormatKind::NsightSqlite => "nsight_systems_sqlite",
            FormatKind::NsightParquetDir => "nsight_systems_parquetdir",
            FormatKind::NsightArrowDir => "nsight_systems_arrowdir",
            FormatKind::NsightReport => "nsys_rep",
            FormatKind::Sqlite => "sqlite",
            FormatKind::PyperfJson => "pyperf_json",
            FormatKind::HyperfineJson => "hyperfine_json",
            FormatKind::GoogleBenchmarkJson => "google_benchmark_json",
            FormatKind::CriterionDir => "criterion_dir",
            FormatKind::PythonImportTime => "python_importtime",
            FormatKind::CoverageJson => "coverage_json",
            FormatKind::JunitXml => "junit_xml",
            FormatKind::OtlpJson => "otlp_json",
            FormatKind::ConfigurationObservations => "configuration_observations",
            FormatKind::ReducedStacks => "reduced_stacks",
            FormatKind::XPlane => "xplane",
            FormatKind::FtraceText => "ftrace_text",
            FormatKind::TraceCmd => "trace_cmd",
            FormatKind::PerfData => "perf_data",
            FormatKind::Memray => "memray",
            FormatKind::GoTrace => "go_trace",
            FormatKind::RocprofJson => "rocprofv3_json",
            FormatKind::RocprofCsv => "rocprofv3_csv",
            FormatKind::RocprofCsvDir => "rocprofv3_csv_dir",
            FormatKind::Unknown => "unknown",
        }
    }
}
