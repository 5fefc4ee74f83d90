//! An independent model of the GPU breakdown, computed straight from a
//! Kineto JSON file with serde_json: sorted, merged intervals and plain
//! loops, nothing shared with the production code. Timestamps are read
//! from the JSON text (`RawValue`) and converted to integer ns exactly, so
//! the comparisons can be exact.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Kernel launches and async copies HTA pairs with device work.
pub const LAUNCH_CALLS: &[&str] = &[
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaLaunchCooperativeKernel",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "hipLaunchKernel",
    "hipExtLaunchKernel",
    "hipModuleLaunchKernel",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "hipMemcpyAsync",
    "hipMemsetAsync",
];

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(rename = "traceEvents", borrow)]
    events: Vec<Event<'a>>,
}

#[derive(Deserialize)]
struct Event<'a> {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    #[serde(default)]
    args: Value,
}

/// µs as written in the JSON → ns: three fractional digits exact, the
/// fourth rounds half away from zero.
pub fn exact_ns(raw: &str) -> i64 {
    let text = raw.trim().trim_matches('"');
    if text.contains(['e', 'E']) {
        return (text.parse::<f64>().expect("number") * 1000.0).round() as i64;
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let mut ns: i64 = if int.is_empty() {
        0
    } else {
        int.parse().expect("int")
    } * 1000;
    let frac: Vec<i64> = frac.bytes().map(|b| i64::from(b - b'0')).collect();
    for (i, scale) in [100, 10, 1].into_iter().enumerate() {
        ns += frac.get(i).copied().unwrap_or(0) * scale;
    }
    if frac.get(3).is_some_and(|d| *d >= 5) {
        ns += 1;
    }
    if negative { -ns } else { ns }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Compute,
    Communication,
    Memory,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Compute => "computation",
            Class::Communication => "communication",
            Class::Memory => "memory",
        }
    }
}

/// One kernel, memcpy or memset.
#[derive(Debug, Clone)]
pub struct Op {
    pub index: usize,
    pub name: String,
    pub class: Class,
    pub memset: bool,
    pub ts: i64,
    pub end: i64,
    pub device: i64,
    pub stream: i64,
    pub correlation: Option<i64>,
    pub bytes: Option<i64>,
}

/// One host runtime/driver call.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: String,
    pub ts: i64,
    pub dur: i64,
    pub correlation: Option<i64>,
}

pub struct Trace {
    pub ops: Vec<Op>,
    pub calls: Vec<Call>,
    /// `distributedInfo.rank`.
    pub rank: Option<i64>,
}

pub fn read(path: &Path) -> Trace {
    let mut text = String::new();
    let file = std::fs::File::open(path).expect("corpus file");
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .expect("gunzip");
    } else {
        std::io::BufReader::new(file)
            .read_to_string(&mut text)
            .expect("read");
    }
    let doc: Doc = serde_json::from_str(&text).expect("kineto json");
    let head: Value = serde_json::from_str(&text).expect("json");
    let rank = head["distributedInfo"]["rank"].as_i64();
    let mut ops = Vec::new();
    let mut calls = Vec::new();
    for (index, e) in doc.events.iter().enumerate() {
        if e.ph.as_deref() != Some("X") {
            continue;
        }
        let (Some(ts), Some(name)) = (e.ts, e.name.clone()) else {
            continue;
        };
        let ts = exact_ns(ts.get());
        let dur = e.dur.map_or(0, |d| exact_ns(d.get()).max(0));
        let cat = e.cat.as_deref().unwrap_or("").to_lowercase();
        let int = |key: &str| e.args[key].as_i64();
        let lower = name.to_lowercase();
        let class = match cat.as_str() {
            "kernel" if lower.contains("nccl") || lower.contains("rccl") => Class::Communication,
            "kernel" => Class::Compute,
            "gpu_memcpy" | "memcpy" | "gpu_memset" | "memset" => Class::Memory,
            "cuda_runtime" | "cuda_driver" | "runtime" => {
                calls.push(Call {
                    name,
                    ts,
                    dur,
                    correlation: int("correlation"),
                });
                continue;
            }
            _ => continue,
        };
        ops.push(Op {
            index,
            memset: cat.ends_with("memset"),
            name,
            class,
            ts,
            end: ts + dur,
            device: int("device").expect("device arg"),
            stream: int("stream").expect("stream arg"),
            correlation: int("correlation"),
            bytes: int("bytes"),
        });
    }
    Trace { ops, calls, rank }
}

/// Sorted, merged intervals.
pub fn merged(mut spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    spans.sort();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

pub fn length(spans: &[(i64, i64)]) -> i64 {
    spans.iter().map(|(s, e)| e - s).sum()
}

/// Length of the intersection of two merged lists (two pointers).
pub fn intersection(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        total += (hi - lo).max(0);
        if a[i].1 < b[j].1 { i += 1 } else { j += 1 }
    }
    total
}

/// span, compute, communication (not under compute), memory (not under
/// either), idle; plus communication union and its part under compute.
#[derive(Debug, PartialEq)]
pub struct Temporal {
    pub span: i64,
    pub compute: i64,
    pub communication: i64,
    pub memory: i64,
    pub idle: i64,
    pub communication_union: i64,
    pub overlapped: i64,
}

pub fn temporal(ops: &[&Op]) -> Temporal {
    let of = |keep: &dyn Fn(Class) -> bool| {
        merged(
            ops.iter()
                .filter(|o| keep(o.class))
                .map(|o| (o.ts, o.end))
                .collect(),
        )
    };
    let compute = of(&|c| c == Class::Compute);
    let communication = of(&|c| c == Class::Communication);
    let busy = of(&|c| c != Class::Memory);
    let all = of(&|_| true);
    let first = ops.iter().map(|o| o.ts).min().unwrap_or(0);
    let last = ops.iter().map(|o| o.end).max().unwrap_or(0);
    Temporal {
        span: last - first,
        compute: length(&compute),
        communication: length(&busy) - length(&compute),
        memory: length(&all) - length(&busy),
        idle: (last - first) - length(&all),
        communication_union: length(&communication),
        overlapped: intersection(&communication, &compute),
    }
}

/// Per stream: gaps, idle, host wait, kernel wait, other (ns).
#[derive(Debug, Default, PartialEq)]
pub struct Idle {
    pub operations: i64,
    pub gaps: i64,
    pub idle: i64,
    pub host_wait: i64,
    pub kernel_wait: i64,
    pub other: i64,
}

pub fn stream_idle(trace: &Trace, kernel_wait_ns: i64) -> BTreeMap<(i64, i64), Idle> {
    let mut launch: HashMap<i64, i64> = HashMap::new();
    for c in &trace.calls {
        if let Some(corr) = c.correlation {
            let t = launch.entry(corr).or_insert(c.ts);
            *t = (*t).min(c.ts);
        }
    }
    let mut per: BTreeMap<(i64, i64), Vec<&Op>> = BTreeMap::new();
    for o in &trace.ops {
        per.entry((o.device, o.stream)).or_default().push(o);
    }
    let mut out = BTreeMap::new();
    for (key, mut ops) in per {
        ops.sort_by_key(|o| (o.ts, o.index));
        let mut idle = Idle {
            operations: ops.len() as i64,
            ..Idle::default()
        };
        let mut running_end: Option<i64> = None;
        for o in ops {
            if let Some(end) = running_end.filter(|end| o.ts > *end) {
                let gap = o.ts - end;
                idle.gaps += 1;
                idle.idle += gap;
                let late = o
                    .correlation
                    .and_then(|c| launch.get(&c))
                    .is_some_and(|l| *l > end);
                if late {
                    idle.host_wait += gap;
                } else if gap < kernel_wait_ns {
                    idle.kernel_wait += gap;
                } else {
                    idle.other += gap;
                }
            }
            running_end = Some(running_end.map_or(o.end, |e| e.max(o.end)));
        }
        out.insert(key, idle);
    }
    out
}

/// (type, count, total, min, max) per name.
pub fn kernels(trace: &Trace) -> BTreeMap<String, (Class, i64, i64, i64, i64)> {
    let mut out: BTreeMap<String, (Class, i64, i64, i64, i64)> = BTreeMap::new();
    for o in &trace.ops {
        let d = o.end - o.ts;
        let s = out
            .entry(o.name.clone())
            .or_insert((o.class, 0, 0, i64::MAX, i64::MIN));
        *s = (s.0, s.1 + 1, s.2 + d, s.3.min(d), s.4.max(d));
    }
    out
}

/// (pairs, short, runtime outliers, delay outliers) for HTA's thresholds.
pub fn launch_counts(trace: &Trace, runtime_ns: i64, delay_ns: i64) -> (i64, i64, i64, i64) {
    let mut by_corr: HashMap<i64, Vec<&Call>> = HashMap::new();
    for c in &trace.calls {
        if let Some(corr) = c
            .correlation
            .filter(|_| LAUNCH_CALLS.contains(&c.name.as_str()))
        {
            by_corr.entry(corr).or_default().push(c);
        }
    }
    let mut n = (0, 0, 0, 0);
    for o in &trace.ops {
        for c in o
            .correlation
            .and_then(|k| by_corr.get(&k))
            .into_iter()
            .flatten()
        {
            let gpu = o.end - o.ts;
            let delay = (o.ts - c.ts - c.dur).max(0);
            n.0 += 1;
            n.1 += i64::from(c.dur <= runtime_ns && gpu < c.dur);
            n.2 += i64::from(c.dur > runtime_ns);
            n.3 += i64::from(delay > delay_ns);
        }
    }
    n
}

/// (count, bytes, time) per (device, direction).
pub fn bandwidth(trace: &Trace) -> BTreeMap<(i64, String), (i64, i64, i64)> {
    let mut out: BTreeMap<(i64, String), (i64, i64, i64)> = BTreeMap::new();
    for o in trace.ops.iter().filter(|o| o.class == Class::Memory) {
        let direction = if o.memset {
            "memset"
        } else {
            match o.name.get(..11) {
                Some("Memcpy HtoD") => "H2D",
                Some("Memcpy DtoH") => "D2H",
                Some("Memcpy DtoD") => "D2D",
                Some("Memcpy PtoP") => "P2P",
                _ => "other",
            }
        };
        let s = out.entry((o.device, direction.to_owned())).or_default();
        *s = (s.0 + 1, s.1 + o.bytes.unwrap_or(0), s.2 + (o.end - o.ts));
    }
    out
}
