//! Format detection by content.
//!
//! `flameox import PATH` without `--kind` must pick an extractor from the
//! bytes, because file names lie (`trace.json` that is gzip, `.pb` that is
//! pprof or Perfetto). This module looks at the first (decompressed) bytes:
//! SQLite and Nsight headers, the JSON first token and top-level keys, text
//! line shapes, protobuf field tags. The file name only breaks ties.

/// The input formats flameox knows about (not all have an extractor yet).
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
    Unknown,
}

impl FormatKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FormatKind; 17] = [
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
            FormatKind::Unknown => "unknown",
        }
    }

    /// Parses a `--kind` value: a [`FormatKind::name`] or a known alias.
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "execution_trace" | "chrome" | "kineto" | "chrome_trace" | "torch_profiler" => {
                Some(FormatKind::ChromeJson)
            }
            "speedscope" => Some(FormatKind::SpeedscopeJson),
            "cpuprofile" => Some(FormatKind::ChromeCpuProfile),
            "gecko" | "firefox" => Some(FormatKind::GeckoProfile),
            "folded" | "collapsed" => Some(FormatKind::FoldedStacks),
            "perfetto" => Some(FormatKind::PerfettoProtobuf),
            "nsys_sqlite" | "nsight_sqlite" => Some(FormatKind::NsightSqlite),
            "nsys-rep" | "nsight_report" => Some(FormatKind::NsightReport),
            "pyperf" => Some(FormatKind::PyperfJson),
            "hyperfine" => Some(FormatKind::HyperfineJson),
            "gbench" | "google_benchmark" | "google-benchmark" => {
                Some(FormatKind::GoogleBenchmarkJson)
            }
            "criterion" => Some(FormatKind::CriterionDir),
            _ => None,
        };
        alias.or_else(|| FormatKind::ALL.into_iter().find(|k| k.name() == lower))
    }
}

/// What [`detect`] concluded and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub kind: FormatKind,
    /// Likely producer (`torch.profiler`, `py-spy`, `chrome`, …) when visible.
    pub producer_hint: Option<String>,
    /// One sentence naming the evidence, for messages and logs.
    pub reason: String,
}

fn found(kind: FormatKind, producer: Option<&str>, reason: impl Into<String>) -> Detection {
    Detection {
        kind,
        producer_hint: producer.map(str::to_string),
        reason: reason.into(),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Detects the format of an input from its first (decompressed) bytes.
pub fn detect(head: &[u8], file_name: Option<&str>) -> Detection {
    let name = file_name.unwrap_or("").to_ascii_lowercase();
    if head.starts_with(b"SQLite format 3\0") {
        if contains(head, b"CUPTI_ACTIVITY_KIND") || contains(head, b"TARGET_INFO") {
            return found(
                FormatKind::NsightSqlite,
                Some("nsys"),
                "SQLite header with Nsight Systems tables",
            );
        }
        return found(
            FormatKind::Sqlite,
            None,
            "SQLite header without Nsight tables",
        );
    }
    if head.starts_with(b"NVIDIA Tegra Profiler Report") {
        return found(
            FormatKind::NsightReport,
            Some("nsys"),
            "Nsight Systems report magic",
        );
    }
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| body[i]) {
        Some(b'{') | Some(b'[') => {
            if let Some(d) = detect_json(body, start.unwrap_or(0)) {
                return d;
            }
        }
        None if head.is_empty() => return found(FormatKind::Unknown, None, "empty input"),
        _ => {}
    }
    if looks_folded(head) {
        return found(
            FormatKind::FoldedStacks,
            None,
            "text lines of `frame;frame count`",
        );
    }
    if let Some(d) = detect_protobuf(head, &name) {
        return d;
    }
    found(
        FormatKind::Unknown,
        None,
        format!(
            "no known format matches the first bytes `{}`",
            escape_head(head, 32)
        ),
    )
}

/// The first `n` bytes, escaped for a message.
pub fn escape_head(head: &[u8], n: usize) -> String {
    head[..head.len().min(n)].escape_ascii().to_string()
}

fn chrome_producer(head: &[u8]) -> &'static str {
    const KINETO: [&[u8]; 7] = [
        b"\"schemaVersion\"",
        b"\"deviceProperties\"",
        b"\"distributedInfo\"",
        b"\"traceName\"",
        b"\"cpu_op\"",
        b"\"cuda_runtime\"",
        b"ProfilerStep#",
    ];
    if KINETO.iter().any(|m| contains(head, m)) {
        "torch.profiler"
    } else if contains(head, b"\"py-spy\"") {
        "py-spy"
    } else {
        "chrome"
    }
}

/// Top-level keys that belong to JSON formats other than Chrome traces.
const NOT_CHROME_KEYS: [&str; 16] = [
    "nodes",
    "startTime",
    "$schema",
    "shared",
    "profiles",
    "label",
    "markers",
    "ticks",
    "rocprofiler-sdk-tool",
    "benchmarks",
    "files",
    "totals",
    "meta",
    "samples",
    "timeDeltas",
    "activeProfileIndex",
];

fn detect_json(body: &[u8], start: usize) -> Option<Detection> {
    if body[start] == b'[' {
        let mut i = skip_ws(body, start + 1);
        match body.get(i) {
            Some(b']') => {
                return Some(found(
                    FormatKind::ChromeJson,
                    Some("chrome"),
                    "empty JSON array",
                ));
            }
            Some(b'{') => {
                i += 1;
                let scan = scan_keys(body, i);
                let eventish = ["pid", "ts", "name", "cat", "tid"];
                if scan.keys.iter().any(|k| k == "ph")
                    || (!scan.complete && scan.keys.iter().any(|k| eventish.contains(&k.as_str())))
                {
                    return Some(found(
                        FormatKind::ChromeJson,
                        Some(chrome_producer(body)),
                        "JSON array of trace events",
                    ));
                }
                return None;
            }
            _ => return None,
        }
    }
    let scan = scan_keys(body, start + 1);
    let has = |k: &str| scan.keys.iter().any(|x| x == k);
    if has("traceEvents") {
        return Some(found(
            FormatKind::ChromeJson,
            Some(chrome_producer(body)),
            "JSON object with `traceEvents`",
        ));
    }
    // speedscope: py-spy writes `profiles` before `shared`, so a long file's
    // head may show only `profiles` (with its `type`s) or only `shared`.
    let speedscope_profiles =
        has("profiles") && (contains(body, b"\"sampled\"") || contains(body, b"\"evented\""));
    let speedscope_frames = has("shared") && !scan.complete && contains(body, b"\"frames\"");
    if (has("$schema") && contains(body, b"speedscope"))
        || (has("shared") && has("profiles"))
        || speedscope_profiles
        || speedscope_frames
    {
        return Some(found(
            FormatKind::SpeedscopeJson,
            None,
            "speedscope file schema",
        ));
    }
    if has("nodes") && (has("startTime") || has("samples") || !scan.complete) {
        return Some(found(
            FormatKind::ChromeCpuProfile,
            Some("v8"),
            "V8 cpuprofile (`nodes`, `startTime`)",
        ));
    }
    if let Some(d) = crate::benchmarks::detect_benchmark_json(&scan.keys, body) {
        return Some(d);
    }
    if let Some(reason) = gecko_evidence(&scan, body) {
        // No producer hint: the engine would force it; the extractor names
        // the producer from `meta.product`.
        return Some(found(FormatKind::GeckoProfile, None, reason));
    }
    if !scan.complete
        && !scan
            .keys
            .iter()
            .any(|k| NOT_CHROME_KEYS.contains(&k.as_str()))
    {
        return Some(found(
            FormatKind::ChromeJson,
            Some(chrome_producer(body)),
            "JSON object whose head shows only trace metadata keys",
        ));
    }
    None
}

/// A Gecko profile: a Firefox DevTools recording (`profile` beside `label`,
/// `duration`, …, or a head cut inside its leading `markers`/`ticks`), or a
/// bare profile (`meta` + `threads`, or a head cut inside `meta`, `libs` or
/// `threads` that shows Gecko's own keys).
fn gecko_evidence(scan: &KeyScan, body: &[u8]) -> Option<&'static str> {
    let has = |k: &str| scan.keys.iter().any(|x| x == k);
    let wrapper_keys = ["label", "duration", "fileType", "ticks", "configuration"];
    if has("profile") && wrapper_keys.iter().any(|k| has(k)) {
        return Some("Firefox DevTools recording with a Gecko `profile`");
    }
    if !scan.complete
        && has("label")
        && has("duration")
        && ["markers", "frames", "memory", "ticks"]
            .iter()
            .any(|k| has(k))
    {
        return Some("Firefox DevTools recording head (`label`, `duration`, `markers`…)");
    }
    if has("meta") && has("threads") {
        return Some("Gecko profile (`meta` and `threads`)");
    }
    let gecko_keys = contains(body, b"\"stackTable\"") && contains(body, b"\"frameTable\"");
    let gecko_meta = contains(body, b"\"interval\"")
        && (contains(body, b"\"stackwalk\"") || contains(body, b"\"processType\""));
    let gecko_libs = contains(body, b"\"breakpadId\"");
    if !scan.complete
        && (has("meta") || has("libs") || has("threads"))
        && (gecko_keys || gecko_meta || (has("libs") && gecko_libs))
    {
        return Some("Gecko profile head (`meta`/`libs`/`threads` with Gecko keys)");
    }
    None
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

struct KeyScan {
    keys: Vec<String>,
    /// Whether the object's closing brace was reached inside the head.
    complete: bool,
}

/// Reads the keys of the object whose `{` is just before `i`, skipping the
/// values iteratively; stops quietly where the head is cut off.
fn scan_keys(b: &[u8], mut i: usize) -> KeyScan {
    let mut keys = Vec::new();
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'}') => {
                return KeyScan {
                    keys,
                    complete: true,
                };
            }
            Some(b',') => {
                i += 1;
                continue;
            }
            Some(b'"') => {}
            _ => {
                return KeyScan {
                    keys,
                    complete: false,
                };
            }
        }
        let Some(end) = string_end(b, i) else {
            return KeyScan {
                keys,
                complete: false,
            };
        };
        let key = String::from_utf8_lossy(&b[i + 1..end - 1]).into_owned();
        keys.push(key);
        i = skip_ws(b, end);
        if b.get(i) != Some(&b':') {
            return KeyScan {
                keys,
                complete: false,
            };
        }
        i = skip_ws(b, i + 1);
        match value_end(b, i) {
            Some(e) => i = e,
            None => {
                return KeyScan {
                    keys,
                    complete: false,
                };
            }
        }
    }
}

/// Index just past the string starting at `b[i] == '"'`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// Index just past the JSON value starting at `i` (iterative: any depth).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0u64;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let j = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace())?;
            Some(i + j)
        }
    }
}

/// `frame;frame 42` lines (the last line may be cut off by the head).
fn looks_folded(head: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(trim_partial_utf8(head)) else {
        return false;
    };
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None if head.len() < crate::input::MAX_HEAD_BYTES => text,
        None => return false,
    };
    let mut lines = 0;
    for line in complete.lines().filter(|l| !l.trim().is_empty()).take(50) {
        let Some((stack, count)) = line.trim_end().rsplit_once([' ', '\t']) else {
            return false;
        };
        if stack.trim().is_empty() || count.parse::<u64>().is_err() {
            return false;
        }
        lines += 1;
    }
    lines > 0
}

/// Drops a UTF-8 sequence cut off at the end of the head.
fn trim_partial_utf8(head: &[u8]) -> &[u8] {
    match std::str::from_utf8(head) {
        Ok(_) => head,
        Err(e) if e.error_len().is_none() => &head[..e.valid_up_to()],
        Err(_) => head,
    }
}

fn read_varint(b: &[u8], mut i: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(i)?;
        i += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((value, i));
        }
    }
    None
}

/// Walks top-level protobuf fields in the head. Perfetto traces are only
/// field 1 (LEN) packets; pprof `Profile` uses fields 1–14 with fixed wire types.
fn detect_protobuf(head: &[u8], name: &str) -> Option<Detection> {
    let printable = head
        .iter()
        .take(512)
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .count();
    if head.len() >= 16 && printable * 10 >= head.len().min(512) * 9 {
        return None;
    }
    let mut i = 0;
    let mut fields = 0;
    let mut only_packets = true;
    let mut pprof_ok = true;
    while i < head.len() {
        let Some((tag, next)) = read_varint(head, i) else {
            break;
        };
        let (field, wire) = (tag >> 3, tag & 7);
        if field == 0 {
            return None;
        }
        let end = match wire {
            0 => match read_varint(head, next) {
                Some((_, e)) => e,
                None => head.len(),
            },
            1 => next + 8,
            2 => {
                let (len, e) = read_varint(head, next)?;
                if len > (1 << 30) {
                    return None;
                }
                e.saturating_add(len as usize)
            }
            5 => next + 4,
            _ => return None,
        };
        fields += 1;
        if !(field == 1 && wire == 2) {
            only_packets = false;
        }
        let pprof_wire = match field {
            1..=6 | 11 => wire == 2,
            7..=10 | 12 | 14 => wire == 0,
            13 => wire == 0 || wire == 2,
            _ => false,
        };
        pprof_ok &= pprof_wire;
        i = end;
    }
    if fields == 0 {
        return None;
    }
    let pprof_name = name.contains("pprof") || name.ends_with(".pb.gz") || name.ends_with(".prof");
    if only_packets && !pprof_name {
        return Some(found(
            FormatKind::PerfettoProtobuf,
            Some("perfetto"),
            "protobuf of field-1 TracePacket records",
        ));
    }
    if pprof_ok && (fields >= 3 || pprof_name) {
        // No producer hint: the engine would pass it on as a forced producer,
        // and the extractor tells Go from other producers by the functions.
        return Some(found(
            FormatKind::Pprof,
            None,
            "protobuf with pprof Profile field tags",
        ));
    }
    if only_packets {
        return Some(found(
            FormatKind::PerfettoProtobuf,
            Some("perfetto"),
            "protobuf of field-1 records",
        ));
    }
    None
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
