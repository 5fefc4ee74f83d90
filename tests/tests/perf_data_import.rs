//! Linux `perf record` files import by content as `perf_data`: call-chain
//! samples as call-stack samples, sched tracepoints as scheduling rows.
//! Each answer is checked against a reading that knows nothing of
//! flameox: the corpus's `perf script` text of the same recording, the
//! live `perf script` of the sched recording (when `perf` runs here), and
//! a walk of the raw record headers of a cut copy.

use std::collections::BTreeMap;
use std::path::Path;

use flameox_tests::{Project, corpus, skip_without_kernel_tracing};

/// One sample of `perf script` text: its thread, its name at the sample,
/// and its leaf frame as `(address, symbol, module file name)`.
struct ScriptSample {
    tid: i64,
    comm: String,
    leaf: Option<(String, String, String)>,
}

/// `comm tid secs: period event:` lines, each followed by its frames
/// (leaf first): `\t addr symbol+0xoff (module)`.
fn parse_perf_script(text: &str) -> Vec<ScriptSample> {
    let mut out: Vec<ScriptSample> = Vec::new();
    let mut want_leaf = false;
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.starts_with(['\t', ' ']) {
            let t: Vec<&str> = line.split_whitespace().collect();
            let n = t.len();
            assert!(n >= 5, "sample header: {line}");
            out.push(ScriptSample {
                tid: t[n - 4].parse().expect("tid"),
                comm: t[..n - 4].join(" "),
                leaf: None,
            });
            want_leaf = true;
        } else if want_leaf {
            want_leaf = false;
            let l = line.trim();
            let (addr, rest) = l.split_once(' ').expect("address then symbol");
            let open = rest.rfind(" (").expect("module in parentheses");
            let module = rest[open + 2..].trim_end_matches(')');
            let module = module.rsplit('/').next().unwrap_or(module);
            let symbol = rest[..open].split("+0x").next().unwrap_or("");
            if let Some(last) = out.last_mut() {
                last.leaf = Some((addr.to_owned(), symbol.to_owned(), module.to_owned()));
            }
        }
    }
    out
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `perf ARGS`' standard output, or `None` (said on stderr) when `perf`
/// does not run here: the live oracles are skipped then.
fn perf(args: &[&str]) -> Option<Vec<u8>> {
    let out = std::process::Command::new("perf").args(args).output();
    match out {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => Some(out.stdout),
        _ => {
            skip_without_kernel_tracing(&format!("`perf {}`", args.join(" ")));
            None
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn callchain_samples_match_the_perf_script_text_of_the_same_recording() {
    let text = corpus().join("stacks/perf_mixed.perf-script.txt");
    let script = parse_perf_script(&std::fs::read_to_string(text).expect("corpus"));
    let n = script.len() as u64;
    assert!(n > 500, "{n} samples in the text");
    let project = Project::new();
    let file = corpus().join("linux/perf_mixed_cpuclock_callchains.perf.data");
    let imported = project.json(&["import", utf8(&file)]);
    assert_eq!(imported["kind"], "perf_data", "{imported}");
    assert_eq!(imported["producer"], "perf", "{imported}");
    assert_eq!(imported["rows"]["samples"].as_u64(), Some(n), "{imported}");
    let meta = &imported["artifacts"][0]["metadata"];
    assert_eq!(meta["samples_by_event"]["cpu-clock:ppp"], n, "{meta}");
    assert_eq!(meta["events"][0]["sample_freq_hz"], 499, "{meta}");
    let cmdline = meta["cmdline"].as_str().unwrap_or("");
    assert!(cmdline.contains("perf record"), "{meta}");

    // The leaf counted most often, named as perf names a frame in a mapped
    // file: its file name and the offset in it.
    let mut leaves: BTreeMap<(String, String), (u64, String)> = BTreeMap::new();
    for s in &script {
        let (addr, symbol, module) = s.leaf.clone().expect("every sample has a frame");
        let label = if module == "[unknown]" {
            format!("0x{addr}")
        } else {
            format!("{module}+0x{addr}")
        };
        leaves.entry((label, module)).or_insert((0, symbol)).0 += 1;
    }
    let mut ranked: Vec<_> = leaves.iter().collect();
    ranked.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
    let ((label, module), (top_n, symbol)) = ranked[0];
    assert!(*top_n > ranked[1].1.0, "the text's top leaf is unique");
    let hot = project.json(&["analyze", "hotspots", "latest", "--limit", "1"]);
    assert_eq!(hot["metric"], "cpu.samples", "{hot}");
    assert_eq!(hot["total_self"].as_u64(), Some(n), "{hot}");
    let top = &hot["rows"][0];
    assert_eq!(top["module"], module.as_str(), "{top}");
    if top["function"] == label.as_str() {
        // Unsymbolized here (the file is not on this machine, or stripped):
        // one frame per address, as perf counts it.
        assert_eq!(top["self_value"].as_u64(), Some(*top_n), "{top}");
    } else {
        // Named here from the same build: a function merges its addresses.
        assert_eq!(top["function"], symbol.as_str(), "{top} vs {label}");
        assert!(top["self_value"].as_u64() >= Some(*top_n), "{top}");
    }

    // Every sampled thread with its samples, and no other.
    let mut per_tid: BTreeMap<i64, u64> = BTreeMap::new();
    for s in &script {
        *per_tid.entry(s.tid).or_default() += 1;
    }
    let threads = project.json(&["threads", "latest", "--limit", "1000"]);
    let mut listed: BTreeMap<i64, u64> = BTreeMap::new();
    for row in threads["rows"].as_array().expect("rows") {
        if let (Some(tid), Some(n)) = (row["tid"].as_i64(), row["samples"].as_u64())
            && n > 0
        {
            listed.insert(tid, n);
        }
    }
    assert_eq!(listed, per_tid, "{threads}");

    // Thread names come from the recording's COMM records: a name carried
    // by many samples scopes hotspots to exactly its threads' samples.
    let mut last_name: BTreeMap<i64, &str> = BTreeMap::new();
    for s in &script {
        last_name.insert(s.tid, &s.comm);
    }
    let mut by_name: BTreeMap<&str, u64> = BTreeMap::new();
    for (tid, name) in &last_name {
        *by_name.entry(name).or_default() += per_tid[tid];
    }
    let mut checked = 0;
    for (name, n) in by_name.iter().filter(|(_, n)| **n >= 50) {
        let scoped = project.json(&["analyze", "hotspots", "latest", "--thread", name]);
        assert_eq!(scoped["total_self"].as_u64(), Some(*n), "{name}: {scoped}");
        checked += 1;
    }
    assert!(checked >= 2, "{by_name:?}");

    // The headline names the busiest thread.
    let (top_tid, _) = per_tid
        .iter()
        .max_by_key(|(tid, n)| (**n, std::cmp::Reverse(**tid)))
        .expect("a sample");
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains(&format!("tid {top_tid}")), "{headline}");

    // The same recording in pipe mode (`perf inject -o -`), when perf runs.
    if let Some(bytes) = perf(&["inject", "-o", "-", "-i", utf8(&file)]) {
        assert!(bytes.starts_with(b"PERFILE2\x10\0"), "a pipe-mode header");
        std::fs::write(project.path().join("pipe.perf.data"), bytes).expect("write");
        let imported = project.json(&["import", "pipe.perf.data"]);
        assert_eq!(imported["kind"], "perf_data", "{imported}");
        assert_eq!(imported["artifacts"][0]["metadata"]["pipe_mode"], true);
        assert_eq!(imported["rows"]["samples"].as_u64(), Some(n), "{imported}");
    }
}

/// Per tid: time on a CPU from consecutive switches on each CPU (a task
/// runs on one CPU at a time: switched in on another, its earlier run ends
/// there; the last run of each CPU is open and counts nothing).
fn on_cpu_from_switches(script: &str) -> (BTreeMap<i64, i64>, usize) {
    let ns = |s: &str| -> i64 {
        let (whole, frac) = s.split_once('.').expect("seconds with a fraction");
        whole.parse::<i64>().expect("s") * 1_000_000_000
            + format!("{frac:0<9}").parse::<i64>().expect("ns")
    };
    let mut running: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut on_cpu: BTreeMap<i64, i64> = BTreeMap::new();
    let mut switches = 0;
    for line in script.lines() {
        // `[cpu] secs.nanos: sched:sched_switch: … next_pid=N …`
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 3 || t[2] != "sched:sched_switch:" {
            continue;
        }
        switches += 1;
        let (cpu, ts) = (t[0].to_owned(), ns(t[1].trim_end_matches(':')));
        let next: i64 = line
            .split("next_pid=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .expect("next_pid");
        let mut end = |tid: i64, start: i64| {
            if tid != 0 {
                *on_cpu.entry(tid).or_default() += ts - start;
            }
        };
        if let Some((tid, start)) = running.remove(&cpu) {
            end(tid, start);
        }
        if next != 0
            && let Some(other) = running
                .iter()
                .find(|(_, (tid, _))| *tid == next)
                .map(|(c, _)| c.clone())
            && let Some((tid, start)) = running.remove(&other)
        {
            end(tid, start);
        }
        running.insert(cpu, (next, ts));
    }
    (on_cpu, switches)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn sched_tracepoints_give_the_on_cpu_time_perf_scripts_switches_give() {
    let file = corpus().join("linux/perf_sched_tracepoints.perf.data");
    let args = [
        "script",
        "--ns",
        "-F",
        "cpu,time,event,trace",
        "-i",
        utf8(&file),
    ];
    let Some(script) = perf(&args) else { return };
    let script = String::from_utf8(script).expect("utf-8");
    let (on_cpu, switches) = on_cpu_from_switches(&script);
    assert!(switches > 1_000, "{switches}");
    let project = Project::new();
    let imported = project.json(&["import", utf8(&file)]);
    assert_eq!(imported["kind"], "perf_data", "{imported}");
    let meta = &imported["artifacts"][0]["metadata"];
    assert_eq!(meta["events_by_name"]["sched_switch"], switches, "{meta}");
    let events_in_script = script
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(2)
                .is_some_and(|e| e.starts_with("sched:"))
        })
        .count();
    let events: u64 = meta["events_by_name"]
        .as_object()
        .expect("events by name")
        .values()
        .filter_map(|v| v.as_u64())
        .sum();
    assert_eq!(events, events_in_script as u64, "{meta}");

    let threads = project.json(&["threads", "latest", "--limit", "1000"]);
    let mut listed: BTreeMap<i64, i64> = BTreeMap::new();
    for row in threads["rows"].as_array().expect("rows") {
        if let Some(tid) = row["tid"].as_i64() {
            let ns = row["on_cpu_ns"].as_i64().unwrap_or(0);
            if ns > 0 {
                listed.insert(tid, ns);
            }
        }
    }
    let ran: BTreeMap<i64, i64> = on_cpu
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(t, n)| (*t, *n))
        .collect();
    assert_eq!(listed, ran, "every thread's time on a CPU");
    let total: i64 = ran.values().sum();
    assert_eq!(
        threads["on_cpu_total_ns"].as_i64(),
        Some(total),
        "{threads}"
    );
    let (top_tid, _) = ran
        .iter()
        .max_by_key(|(tid, ns)| (**ns, std::cmp::Reverse(**tid)))
        .expect("a thread ran");
    let headline = project.json(&["analyze", "summary", "latest"])["headline"]
        .as_str()
        .expect("headline")
        .to_owned();
    assert!(headline.contains(&format!("(tid {top_tid})")), "{headline}");
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_cut_copy_keeps_its_whole_samples_and_version_one_is_refused_by_its_version() {
    let bytes = std::fs::read(corpus().join("linux/perf_mixed_cpuclock_callchains.perf.data"))
        .expect("corpus");
    let (data_at, data_size) = (le64(&bytes, 40) as usize, le64(&bytes, 48) as usize);
    let project = Project::new();
    for share in [3, 6, 9] {
        // Cut inside the records: the sample records wholly before the cut,
        // by a walk of the record headers (`u32 type, u16 misc, u16 size`).
        let cut = data_at + data_size * share / 10 + 5;
        let (mut at, mut whole) = (data_at, 0u64);
        while at + 8 <= cut {
            let size = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
            assert!(size >= 8, "record at {at}");
            if at + size > cut {
                break;
            }
            whole += u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) == 9);
            at += size;
        }
        let name = format!("cut{share}.perf.data");
        std::fs::write(project.path().join(&name), &bytes[..cut]).expect("write");
        let imported = project.json(&["import", &name]);
        assert_eq!(imported["kind"], "perf_data", "{imported}");
        assert_eq!(
            imported["rows"]["samples"].as_u64(),
            Some(whole),
            "{imported}"
        );
        let limitations = imported["limitations"].to_string();
        assert!(
            limitations.contains(r#""code":"truncated_input""#),
            "{limitations}"
        );
    }
    // Cut inside the header: nothing to keep, a typed answer.
    std::fs::write(project.path().join("head.perf.data"), &bytes[..60]).expect("write");
    project.json_err(&["import", "head.perf.data"], "ARTIFACT_PARSE_FAILED", 5);

    // The version-1 magic is recognised and refused by its version.
    let mut v1 = bytes.clone();
    v1[..8].copy_from_slice(b"PERFFILE");
    std::fs::write(project.path().join("v1.perf.data"), &v1).expect("write");
    let err = project.json_err(&["import", "v1.perf.data"], "CAPABILITY_UNAVAILABLE", 3);
    assert!(
        err["details"]["version_found"]
            .as_str()
            .unwrap_or("")
            .starts_with('1'),
        "{err}"
    );
}

/// A recording made here (when `perf record` may trace): samples and
/// tracepoints of one file both reach the evidence.
#[test]
fn one_recording_with_samples_and_sched_tracepoints_gives_both() {
    let project = Project::new();
    let file = project.path().join("both.perf.data");
    let workload = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 0.01";
    let record = [
        "record",
        "-q",
        "-g",
        "-e",
        "cpu-clock",
        "-e",
        "sched:sched_switch",
        "-o",
    ];
    let recorded = std::process::Command::new("perf")
        .args(record)
        .arg(&file)
        .args(["--", "sh", "-c", workload])
        .output()
        .is_ok_and(|o| o.status.success());
    let script = recorded
        .then(|| perf(&["script", "-F", "event", "-i", utf8(&file)]))
        .flatten();
    let Some(script) = script.map(|s| String::from_utf8_lossy(&s).into_owned()) else {
        skip_without_kernel_tracing("`perf record` of cpu-clock and sched_switch");
        return;
    };
    let count = |event: &str| script.lines().filter(|l| l.trim() == event).count() as u64;
    let (samples, switches) = (count("cpu-clock:"), count("sched:sched_switch:"));
    assert!(
        samples > 0 && switches > 0,
        "{samples} samples, {switches} switches"
    );
    let imported = project.json(&["import", "both.perf.data"]);
    assert_eq!(imported["kind"], "perf_data", "{imported}");
    assert_eq!(
        imported["rows"]["samples"].as_u64(),
        Some(samples),
        "{imported}"
    );
    let meta = &imported["artifacts"][0]["metadata"];
    assert_eq!(meta["events_by_name"]["sched_switch"], switches, "{meta}");
    assert_eq!(meta["cpu_samples_events"]["cpu-clock"], samples, "{meta}");
    // (Whether switches of one task make scheduling rows depends on the
    // CPUs it ran on: a per-task recording sees only its own switches.)
    assert_eq!(
        imported["coverage"]["callstack_samples"], true,
        "{imported}"
    );
}
