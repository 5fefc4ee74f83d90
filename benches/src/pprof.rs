//! A gzipped pprof `profile.proto` generator shaped like Go's
//! `runtime/pprof` output: a CPU profile (`samples/count`, `cpu/nanoseconds`,
//! period 10 ms) or a heap profile (`alloc_objects`, `alloc_space`,
//! `inuse_objects`, `inuse_space`, default `inuse_space`).
//!
//! One sample per distinct stack (as Go writes them), leaf location first;
//! one location per function at an address inside its mapping (the main
//! binary, libc or the vDSO); every 7th location also carries an inlined
//! callee (two `Line`s, innermost first), so frames expand as with real
//! inlining. Samples carry a string label (`endpoint`). Call structure,
//! depth and counts come from [`crate::calltree`]. Gzip with mtime 0, so
//! same seed and size → same bytes.

use std::io::{self, Write};

use flameox_extractors::pprof::proto::{
    Function, Label, Line, Location, Mapping, Profile, Sample, ValueType,
};
use flate2::{Compression, GzBuilder};
use prost::Message;

use crate::calltree::{CallTree, CallTreeSpec};

/// Which Go profile to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PprofKind {
    Cpu,
    Heap,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct PprofSpec {
    pub seed: u64,
    pub kind: PprofKind,
    /// Samples (distinct stacks) to write.
    pub samples: u64,
    pub max_depth: usize,
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PprofCounts {
    pub samples: u64,
    /// Sum of the first sample type's values (`samples` or `alloc_objects`).
    pub first_total: i64,
    /// Distinct frame prefixes after inlined calls are expanded.
    pub stack_nodes: u64,
    pub locations: u64,
    pub functions: u64,
    pub mappings: u64,
    /// Compressed size.
    pub bytes: u64,
}

const VOCABULARY: u32 = 360;
const ROOTS: &[&str] = &[
    "runtime.main",
    "net/http.(*conn).serve",
    "runtime.gcBgMarkWorker",
    "main.(*Worker).run",
];
const PACKAGES: &[&str] = &[
    "net/http",
    "encoding/json",
    "main",
    "database/sql",
    "bufio",
    "compress/gzip",
    "sync",
    "runtime",
    "github.com/acme/store",
];
const TYPES: &[&str] = &["(*Server)", "(*Decoder)", "(*Conn)", "(*Pool)", "(*Reader)"];
const METHODS: &[&str] = &[
    "Read", "Write", "Decode", "Encode", "Query", "Exec", "Lock", "Flush", "Next", "Scan",
];
const ENDPOINTS: &[&str] = &["/api/orders", "/api/users", "/healthz", "/api/search"];
const PERIOD_CPU_NS: i64 = 10_000_000;
const PERIOD_HEAP_BYTES: i64 = 512 * 1024;

/// Builds the string table as it goes (`string_table[0]` = "").
struct Strings(Vec<Vec<u8>>);
impl Strings {
    fn add(&mut self, s: &str) -> i64 {
        self.0.push(s.as_bytes().to_vec());
        self.0.len() as i64 - 1
    }
}

/// (name, file) of vocabulary entry `f`; `f >= VOCABULARY` are the
/// inlined helpers.
fn function_text(f: u32) -> (String, String) {
    if let Some(helper) = f.checked_sub(VOCABULARY) {
        let pkg = PACKAGES[helper as usize % PACKAGES.len()];
        return (
            format!("{pkg}.inlinedHelper{helper}"),
            format!("{pkg}/helpers.go"),
        );
    }
    let pkg = PACKAGES[f as usize % PACKAGES.len()];
    let rest = f as usize / PACKAGES.len();
    let ty = TYPES[rest % TYPES.len()];
    let method = METHODS[(rest / TYPES.len()) % METHODS.len()];
    (
        format!("{pkg}.{ty}.{method}"),
        format!(
            "{pkg}/{}.go",
            ty.trim_matches(['(', ')', '*']).to_lowercase()
        ),
    )
}

/// Location id of vocabulary entry `f` (roots come after the vocabulary).
fn location_id(f: u32) -> u64 {
    f as u64 + 1
}

/// The sample types, period type and default of `kind`.
fn describe(kind: PprofKind, strings: &mut Strings, profile: &mut Profile) {
    let mut vt = |t: &str, u: &str| ValueType {
        r#type: strings.add(t),
        unit: strings.add(u),
    };
    match kind {
        PprofKind::Cpu => {
            profile.sample_type = vec![vt("samples", "count"), vt("cpu", "nanoseconds")];
            profile.period_type = Some(vt("cpu", "nanoseconds"));
            profile.period = PERIOD_CPU_NS;
        }
        PprofKind::Heap => {
            profile.sample_type = vec![
                vt("alloc_objects", "count"),
                vt("alloc_space", "bytes"),
                vt("inuse_objects", "count"),
                vt("inuse_space", "bytes"),
            ];
            profile.period_type = Some(vt("space", "bytes"));
            profile.period = PERIOD_HEAP_BYTES;
            profile.default_sample_type = profile.sample_type[3].r#type;
        }
    }
}

/// Mappings, functions and locations for the whole vocabulary and `roots`
/// entry points.
fn symbol_tables(strings: &mut Strings, profile: &mut Profile, roots: u32) {
    let mappings: [(&str, u64, u64); 3] = [
        ("/usr/local/bin/server", 0x40_0000, 0x140_0000),
        (
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            0x7f00_0000_0000,
            0x7f00_001d_0000,
        ),
        ("[vdso]", 0x7ffd_0000_0000, 0x7ffd_0000_2000),
    ];
    for (i, (file, start, limit)) in mappings.iter().enumerate() {
        profile.mapping.push(Mapping {
            id: i as u64 + 1,
            memory_start: *start,
            memory_limit: *limit,
            filename: strings.add(file),
            build_id: strings.add(&format!("{:040x}", 0xB17D_0000u64 + i as u64)),
            has_functions: i == 0,
            ..Default::default()
        });
    }
    let mut add_function = |profile: &mut Profile, id: u64, name: &str, file: &str| {
        let name = strings.add(name);
        let filename = strings.add(file);
        profile.function.push(Function {
            id,
            name,
            system_name: name,
            filename,
            start_line: 10 + (id as i64 * 37) % 900,
        });
    };
    let helpers = VOCABULARY.div_ceil(7);
    for f in 0..VOCABULARY + helpers {
        let (name, file) = function_text(f);
        add_function(profile, f as u64 + 1, &name, &file);
    }
    let first_root = VOCABULARY + helpers;
    for r in 0..roots {
        let name = match ROOTS.get(r as usize) {
            Some(n) => n.to_string(),
            None => format!("main.(*Worker).run{r}"),
        };
        add_function(profile, (first_root + r) as u64 + 1, &name, "main/main.go");
    }
    for f in 0..VOCABULARY + roots {
        let function = if f < VOCABULARY {
            f
        } else {
            first_root + f - VOCABULARY
        };
        // Roots and every 11th function live in libc / the vDSO.
        let mapping = match f % 11 {
            3 if f < VOCABULARY => 2u64,
            5 if f < VOCABULARY => 3,
            _ => 1,
        };
        let base = profile.mapping[mapping as usize - 1].memory_start;
        let mut line = vec![Line {
            function_id: function as u64 + 1,
            line: 20 + (f as i64 * 13) % 400,
        }];
        if f < VOCABULARY && f.is_multiple_of(7) {
            line.insert(
                0,
                Line {
                    function_id: (VOCABULARY + f / 7) as u64 + 1,
                    line: 5 + (f as i64) % 50,
                },
            );
        }
        profile.location.push(Location {
            id: location_id(f),
            mapping_id: mapping,
            address: base + 0x1000 + f as u64 * 0x94,
            line,
            is_folded: false,
        });
    }
}

/// Frames location `f` expands to.
fn frames_of(f: u32) -> u64 {
    if f < VOCABULARY && f.is_multiple_of(7) {
        2
    } else {
        1
    }
}

/// Writes the gzipped profile.
pub fn write_pprof<W: Write>(spec: &PprofSpec, out: W) -> io::Result<PprofCounts> {
    let mut strings = Strings(vec![Vec::new()]);
    let mut profile = Profile::default();
    describe(spec.kind, &mut strings, &mut profile);
    let roots = ROOTS.len() as u32;
    let endpoint_key = strings.add("endpoint");
    let endpoints: Vec<i64> = ENDPOINTS.iter().map(|e| strings.add(e)).collect();
    let mut tree = CallTree::new(&CallTreeSpec {
        seed: spec.seed,
        stacks: spec.samples,
        roots: roots as u64,
        vocabulary: VOCABULARY,
        max_depth: spec.max_depth,
    });
    let mut counts = PprofCounts::default();
    let mut roots_seen = roots;
    while let Some(stack) = tree.next_stack() {
        roots_seen = roots_seen.max(stack.path[0] + 1);
        // Path element 0 is the root index: its location follows the
        // vocabulary's.
        let loc = |depth: usize, f: u32| {
            if depth == 0 { VOCABULARY + f } else { f }
        };
        let frames = |p: &[u32]| -> u64 {
            p.iter()
                .enumerate()
                .map(|(d, &f)| frames_of(loc(d, f)))
                .sum()
        };
        counts.stack_nodes += frames(stack.path) - frames(&stack.path[..stack.shared_prefix]);
        let leaf = loc(stack.path.len() - 1, *stack.path.last().unwrap_or(&0));
        let n = stack.count;
        let value = match spec.kind {
            PprofKind::Cpu => vec![n, n * PERIOD_CPU_NS],
            PprofKind::Heap => {
                let size = 16 << (leaf % 9);
                let inuse = n * (leaf as i64 % 4) / 4;
                vec![n, n * size, inuse, inuse * size]
            }
        };
        counts.first_total += n;
        counts.samples += 1;
        profile.sample.push(Sample {
            location_id: stack
                .path
                .iter()
                .enumerate()
                .rev()
                .map(|(d, &f)| location_id(loc(d, f)))
                .collect(),
            value,
            label: vec![Label {
                key: endpoint_key,
                str: endpoints[(leaf as usize) % endpoints.len()],
                ..Default::default()
            }],
        });
    }
    // Go writes the tables after the samples too.
    symbol_tables(&mut strings, &mut profile, roots_seen);
    profile.string_table = strings.0;
    profile.time_nanos = 1_764_000_000_000_000_000 + (spec.seed % 1000) as i64 * 1_000_000_000;
    profile.duration_nanos = 30_000_000_000;
    counts.locations = profile.location.len() as u64;
    counts.functions = profile.function.len() as u64;
    counts.mappings = profile.mapping.len() as u64;
    let encoded = profile.encode_to_vec();
    let mut gz = GzBuilder::new()
        .mtime(0)
        .write(CountingWriter(out, 0), Compression::default());
    gz.write_all(&encoded)?;
    let mut inner = gz.finish()?;
    inner.flush()?;
    counts.bytes = inner.1;
    Ok(counts)
}

/// Counts the bytes written through it.
struct CountingWriter<W>(W, u64);
impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        self.1 += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{RowCounts, import_file};
    use flameox_extractors::{EvidenceTable, ExtractOptions, NoObserver, extract_pprof};

    fn spec(seed: u64, kind: PprofKind) -> PprofSpec {
        PprofSpec {
            seed,
            kind,
            samples: 2_000,
            max_depth: 28,
        }
    }

    #[test]
    fn pprof_same_seed_same_bytes_other_seed_other_bytes() {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        let counts = write_pprof(&spec(1, PprofKind::Cpu), &mut a).expect("write");
        write_pprof(&spec(1, PprofKind::Cpu), &mut b).expect("write");
        write_pprof(&spec(2, PprofKind::Cpu), &mut c).expect("write");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(counts.bytes, a.len() as u64);
        assert_eq!(&a[..2], &[0x1f, 0x8b], "gzip magic");
    }

    #[test]
    fn pprof_extracts_and_imports_with_the_counts_the_generator_reports() {
        for (kind, metrics, first) in [
            (PprofKind::Cpu, 2, "cpu.samples"),
            (PprofKind::Heap, 4, "memory.alloc_objects"),
        ] {
            let mut bytes = Vec::new();
            let counts = write_pprof(&spec(3, kind), &mut bytes).expect("write");
            let mut rows = RowCounts::default();
            let options = ExtractOptions::new("r", "a");
            let summary = extract_pprof(
                io::BufReader::new(flate2::read::GzDecoder::new(bytes.as_slice())),
                &options,
                &mut rows,
                &NoObserver,
            )
            .expect("extract");
            assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
            assert_eq!(summary.input_events, counts.samples);
            assert_eq!(summary.producer, "go");
            assert_eq!(summary.metadata["totals"][first], counts.first_total);
            assert_eq!(
                summary.metadata["sample_types"].as_array().map(Vec::len),
                Some(metrics)
            );
            assert!(summary.coverage["inlined_frames"]);
            assert!(summary.coverage["symbolized_frames"]);
            assert_eq!(rows.get(EvidenceTable::StackNodes), counts.stack_nodes);

            let imported = import_file("profile.pb.gz", &bytes);
            assert_eq!(imported.kind, "pprof");
            assert_eq!(imported.rows["stack_nodes"], counts.stack_nodes);
        }
    }
}
