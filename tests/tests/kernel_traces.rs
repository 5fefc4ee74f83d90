//! Linux kernel traces: ftrace text imports by content into the
//! same scheduling evidence a Perfetto system trace gives, and the answers
//! an agent reads first (the summary's headline, the thread list) say
//! where the CPUs went — checked against this test's own walk over the
//! text, which knows nothing of flameox: per CPU, each `sched_switch`
//! starts the next task's run and ends the previous one's.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};

/// Per tid: time on a CPU from consecutive switches on each CPU (the last
/// run of each CPU is open and counts nothing), and switch records.
struct Oracle {
    on_cpu: BTreeMap<i64, i64>,
    switches: usize,
    events: usize,
}

/// `901.594224` → ns.
fn ns(seconds: &str) -> i64 {
    let (whole, frac) = seconds.split_once('.').expect("seconds with a fraction");
    let frac = format!("{frac:0<9}");
    whole.parse::<i64>().expect("seconds") * 1_000_000_000 + frac.parse::<i64>().expect("ns")
}

fn walk(text: &str) -> Oracle {
    let mut running: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut o = Oracle {
        on_cpu: BTreeMap::new(),
        switches: 0,
        events: 0,
    };
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(open) = line.find("] ") else {
            continue;
        };
        let cpu = line[..open].rsplit('[').next().expect("cpu").to_owned();
        let rest: Vec<&str> = line[open + 2..].split_whitespace().collect();
        // flags, `seconds:`, `event:`, fields…
        let (ts, event) = (rest[1].trim_end_matches(':'), rest[2]);
        o.events += 1;
        if event != "sched_switch:" {
            continue;
        }
        o.switches += 1;
        let ts = ns(ts);
        let next: i64 = line
            .split("next_pid=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("next_pid")
            .parse()
            .expect("pid");
        if let Some((tid, start)) = running.remove(&cpu)
            && tid != 0
        {
            *o.on_cpu.entry(tid).or_default() += ts - start;
        }
        running.insert(cpu, (next, ts));
    }
    o
}

/// The import's counts by tracepoint name agree with the walk's.
fn assert_counts(meta: &serde_json::Value, oracle: &Oracle) {
    assert_eq!(
        meta["events_by_name"]["sched_switch"].as_u64(),
        Some(oracle.switches as u64),
        "{meta}"
    );
    let counted: u64 = meta["events_by_name"]
        .as_object()
        .expect("events by name")
        .values()
        .filter_map(|v| v.as_u64())
        .sum();
    assert_eq!(counted, oracle.events as u64, "{meta}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn ftrace_text_imports_as_scheduling_and_the_summary_says_where_the_cpus_went() {
    let file = corpus().join("linux/ftrace_sched_raw.txt");
    let oracle = walk(&std::fs::read_to_string(&file).expect("corpus"));
    assert!(oracle.switches > 2_000, "{}", oracle.switches);
    let project = Project::new();
    let imported = project.json(&["import", file.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "ftrace_text", "{imported}");
    let meta = &imported["artifacts"][0]["metadata"];
    assert_counts(meta, &oracle);
    assert_eq!(meta["cpus"], 2, "{meta}");

    // Every thread's time on a CPU equals the walk's.
    let threads = project.json(&["threads", "latest", "--limit", "1000"]);
    let rows = threads["rows"].as_array().expect("rows");
    let mut ran = Vec::new();
    for row in rows {
        let Some(tid) = row["tid"].as_i64() else {
            continue;
        };
        let want = oracle.on_cpu.get(&tid).copied().unwrap_or(0);
        assert_eq!(
            row["on_cpu_ns"].as_i64().unwrap_or(0),
            want,
            "tid {tid}: {row}"
        );
        if want > 0 {
            ran.push(tid);
        }
    }
    let want: Vec<i64> = oracle
        .on_cpu
        .iter()
        .filter(|(_, ns)| **ns > 0)
        .map(|(t, _)| *t)
        .collect();
    ran.sort_unstable();
    assert_eq!(ran, want, "every thread that ran is listed");
    let total: i64 = oracle.on_cpu.values().sum();
    assert_eq!(
        threads["on_cpu_total_ns"].as_i64(),
        Some(total),
        "{threads}"
    );
    assert_eq!(threads["cpus"], 2);

    // The headline names the thread that ran most and the CPUs' share.
    let (top_tid, top_ns) = oracle
        .on_cpu
        .iter()
        .max_by_key(|(tid, ns)| (**ns, std::cmp::Reverse(**tid)))
        .map(|(t, n)| (*t, *n))
        .expect("a thread ran");
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains(&format!("(tid {top_tid})")), "{headline}");
    assert!(headline.contains("of 2 CPUs × the trace"), "{headline}");
    assert_eq!(summary["threads"][0]["tid"], top_tid, "{summary}");
    assert_eq!(summary["threads"][0]["on_cpu_ns"], top_ns, "{summary}");
    let span = summary["duration_ns"].as_i64().expect("span");
    let pct = summary["cpu"]["on_cpu_pct_of_capacity"]
        .as_f64()
        .expect("pct");
    let want = total as f64 * 100.0 / (2.0 * span as f64);
    assert!((pct - want).abs() < 0.01 && pct <= 100.0, "{pct} vs {want}");
    assert_eq!(summary["next"][0]["operation"], "list_threads", "{summary}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn damaged_ftrace_text_keeps_its_whole_lines_and_nothing_else_is_an_ftrace() {
    let bytes = std::fs::read(corpus().join("linux/ftrace_sched_raw.txt")).expect("corpus");
    let project = Project::new();
    // Cut inside a line: the lines before it are kept, the cut one is not
    // an event (it has no fields after its event name) or is.
    let cut = bytes.len() / 3 + 17;
    let path = project.path().join("cut.txt");
    std::fs::write(&path, &bytes[..cut]).expect("write");
    let imported = project.json(&["import", "cut.txt"]);
    assert_eq!(imported["kind"], "ftrace_text", "{imported}");
    let whole_lines = bytes[..cut]
        .split(|&b| b == b'\n')
        .filter(|l| l.contains(&b'[') && !l.starts_with(b"#"))
        .count();
    let events: u64 = imported["artifacts"][0]["metadata"]["events_by_name"]
        .as_object()
        .expect("events")
        .values()
        .filter_map(|v| v.as_u64())
        .sum();
    assert!(
        events as usize == whole_lines || events as usize + 1 == whole_lines,
        "{events} events of {whole_lines} lines"
    );
    // The header alone holds no event: refused with what was expected.
    let header: Vec<u8> = bytes
        .split_inclusive(|&b| b == b'\n')
        .take(11)
        .flatten()
        .copied()
        .collect();
    std::fs::write(project.path().join("header.txt"), header).expect("write");
    let err = project.json_err(&["import", "header.txt"], "ARTIFACT_PARSE_FAILED", 5);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("no ftrace event line"),
        "{err}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_trace_cmd_file_of_the_same_ring_buffer_gives_the_same_scheduling() {
    // `tracecmd_sched.dat` was extracted from the ring buffer the text was
    // read from: the same events, with ns where the text has µs.
    let text =
        std::fs::read_to_string(corpus().join("linux/ftrace_sched_raw.txt")).expect("corpus");
    let oracle = walk(&text);
    let project = Project::new();
    let dat = corpus().join("linux/tracecmd_sched.dat");
    let imported = project.json(&["import", dat.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "trace_cmd", "{imported}");
    let meta = &imported["artifacts"][0]["metadata"];
    assert_eq!(meta["file_version"], 7, "{meta}");
    assert_counts(meta, &oracle);
    let threads = project.json(&["threads", "latest", "--limit", "1000"]);
    for row in threads["rows"].as_array().expect("rows") {
        let Some(tid) = row["tid"].as_i64() else {
            continue;
        };
        let want = oracle.on_cpu.get(&tid).copied().unwrap_or(0);
        let got = row["on_cpu_ns"].as_i64().unwrap_or(0);
        // Each run's ends are the text's µs rounded: at most 1 µs per run.
        let runs = row["events"].as_i64().unwrap_or(0);
        assert!(
            (got - want).abs() <= runs * 1_000,
            "tid {tid}: {got} vs {want}"
        );
    }
    let headline = project.json(&["analyze", "summary", "latest"])["headline"]
        .as_str()
        .expect("headline")
        .to_owned();
    let top = oracle
        .on_cpu
        .iter()
        .max_by_key(|(tid, ns)| (**ns, std::cmp::Reverse(**tid)))
        .map(|(t, _)| *t)
        .expect("a thread ran");
    assert!(headline.contains(&format!("(tid {top})")), "{headline}");

    // A version this build does not read is named; the run records the
    // failure and holds no evidence.
    let mut bytes = std::fs::read(&dat).expect("corpus");
    assert_eq!(&bytes[10..12], b"7\0", "the version follows the magic");
    bytes[10] = b'9';
    std::fs::write(project.path().join("v9.dat"), &bytes).expect("write");
    let err = project.json_err(&["import", "v9.dat"], "CAPABILITY_UNAVAILABLE", 3);
    assert_eq!(err["details"]["version_found"], "9", "{err}");
    assert_eq!(err["details"]["versions_supported"], "6 and 7", "{err}");
    let runs = project.json(&["runs", "list"]);
    let failed = runs["items"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["run_id"] == err["run_id"])
        .expect("the failed run");
    assert_eq!(failed["extraction"], "failed", "{failed}");
    assert_eq!(failed["trace_events"], 0, "{failed}");
}
