//! Hard interrupts and softirqs recorded here by the kernel's own tracers
//! (`perf record` of the `irq:` tracepoints, and an ftrace instance's
//! text) import as `interrupt` rows on per-CPU tracks, and the summary
//! says how much of the CPUs they took. The oracle is the tracer's own
//! text (`perf script`, the ftrace buffer), walked here per CPU: each
//! entry to its exit is one handler run.
//!
//! Recording needs root (or `perf_event_paranoid` ≤ -1) and a writable
//! tracefs: `.ci/run` sets `FLAMEOX_REQUIRE_KERNEL_TRACING=1`, which turns
//! a tracer that does not run into a failure instead of a skip.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use flameox_tests::{Project, skip_without_kernel_tracing as skip};

/// Work that raises block-device interrupts and softirqs: direct writes.
const WORKLOAD: &str = "dd if=/dev/zero of=interrupts.scratch bs=256k count=40 oflag=direct,sync 2>/dev/null; \
     rm -f interrupts.scratch; sleep 0.05";

/// Per `(cpu, "irq" | "softirq")`: closed handler runs and their ns.
type Walked = BTreeMap<(u32, &'static str), (u64, i64)>;

/// Walks tracer text lines `… [CPU] … SECONDS: [irq:]EVENT: …`: each
/// entry opens a run on its CPU, the next exit of the same kind closes it.
fn walk(text: &str) -> Walked {
    let mut open: BTreeMap<(u32, &'static str), i64> = BTreeMap::new();
    let mut out = Walked::new();
    for line in text.lines() {
        let Some(event) = [
            "irq_handler_entry",
            "irq_handler_exit",
            "softirq_entry",
            "softirq_exit",
        ]
        .into_iter()
        .find(|e| line.contains(&format!(" {e}: ")) || line.contains(&format!(":{e}: "))) else {
            continue;
        };
        let Some(cpu) = line
            .split('[')
            .nth(1)
            .and_then(|r| r.split(']').next())
            .and_then(|c| c.parse::<u32>().ok())
        else {
            continue;
        };
        let seconds = line
            .split_whitespace()
            .find(|w| {
                w.ends_with(':') && w.contains('.') && w[..w.len() - 1].parse::<f64>().is_ok()
            })
            .expect("a timestamp");
        let (whole, frac) = seconds
            .trim_end_matches(':')
            .split_once('.')
            .expect("seconds");
        let frac_ns: i64 = format!("{frac:0<9}")[..9].parse().expect("fraction");
        let ns = whole.parse::<i64>().expect("seconds") * 1_000_000_000 + frac_ns;
        let kind = if event.starts_with("softirq") {
            "softirq"
        } else {
            "irq"
        };
        if event.ends_with("entry") {
            open.insert((cpu, kind), ns);
        } else if let Some(start) = open.remove(&(cpu, kind)) {
            let slot = out.entry((cpu, kind)).or_default();
            *slot = (slot.0 + 1, slot.1 + ns - start);
        }
    }
    out
}

/// Every closed `interrupt` row's `(cpu, category) → (runs, ns)`.
fn imported_interrupts(project: &Project) -> Walked {
    let mut out = Walked::new();
    for e in project.window_events("interrupt", &["category", "dur_ns", "args_json"]) {
        let dur = e["dur_ns"].as_i64().expect("dur");
        if dur < 0 {
            continue;
        }
        let args: serde_json::Value =
            serde_json::from_str(e["args_json"].as_str().expect("args")).expect("args json");
        let cpu = args["cpu"].as_u64().expect("cpu") as u32;
        let kind = match e["category"].as_str() {
            Some("softirq") => "softirq",
            Some("irq") => "irq",
            other => panic!("category {other:?}"),
        };
        let slot = out.entry((cpu, kind)).or_default();
        *slot = (slot.0 + 1, slot.1 + dur);
    }
    out
}

/// The summary's interrupt figures equal the walk's totals.
fn check_summary(project: &Project, walked: &Walked) {
    let (irq, softirq) = walked.iter().fold((0, 0), |(i, s), ((_, kind), (_, ns))| {
        if *kind == "irq" {
            (i + ns, s)
        } else {
            (i, s + ns)
        }
    });
    let summary = project.json(&["analyze", "summary", "latest"]);
    let interrupts = &summary["cpu"]["interrupts"];
    assert_eq!(interrupts["irq_ns"], irq, "{summary}");
    assert_eq!(interrupts["softirq_ns"], softirq, "{summary}");
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("interrupts "), "{headline}");
    // Interrupts are no thread's and no frame: hotspots never show one.
    let hot = project.json(&["analyze", "hotspots", "latest", "--limit", "50"]);
    for row in hot["rows"].as_array().into_iter().flatten() {
        let name = row["function"].as_str().unwrap_or("");
        assert!(
            !["BLOCK", "SCHED", "TIMER", "RCU", "NET_RX"].contains(&name),
            "{hot}"
        );
    }
    eprintln!("headline: {headline}");
}

#[test]
fn perf_record_interrupts_equal_the_perf_script_text() {
    let project = Project::new();
    let file = project.path().join("irq.perf.data");
    let recorded = Command::new("perf")
        .current_dir(project.path())
        .args(["record", "-q", "-a", "-o"])
        .arg(&file)
        .args([
            "-e",
            "irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit",
            "-e",
            "sched:sched_switch,sched:sched_waking",
            "--",
            "sh",
            "-c",
            WORKLOAD,
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    let script = recorded
        .then(|| {
            Command::new("perf")
                .args(["script", "--ns", "-F", "cpu,time,event,trace", "-i"])
                .arg(&file)
                .output()
                .ok()
                .filter(|o| o.status.success())
        })
        .flatten();
    let Some(script) = script.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()) else {
        skip("`perf record -a` of the irq tracepoints");
        return;
    };
    let walked = walk(&script);
    let runs: u64 = walked.values().map(|r| r.0).sum();
    assert!(runs > 0, "the workload raised no interrupt: {script:.2000}");
    let imported = project.json(&["import", "irq.perf.data"]);
    assert_eq!(imported["kind"], "perf_data", "{imported}");
    assert_eq!(imported_interrupts(&project), walked);
    check_summary(&project, &walked);
}

/// An ftrace instance (a private buffer under tracefs `instances/`, so no
/// other tracer is disturbed) with the irq and sched events on; the step
/// that failed, when one did.
fn ftrace_capture(dir: &Path, attempt: u32) -> Result<String, String> {
    let tracefs = Path::new("/sys/kernel/tracing/instances");
    let instance = tracefs.join(format!("flameox-test-{}-{attempt}", std::process::id()));
    std::fs::create_dir(&instance).map_err(|e| format!("creating {}: {e}", instance.display()))?;
    let step = |what: &str, r: std::io::Result<()>| r.map_err(|e| format!("{what}: {e}"));
    let captured = (|| {
        for event in [
            "irq/irq_handler_entry",
            "irq/irq_handler_exit",
            "irq/softirq_entry",
            "irq/softirq_exit",
            "sched/sched_switch",
            "sched/sched_waking",
        ] {
            let enable = instance.join("events").join(event).join("enable");
            step(event, std::fs::write(enable, "1"))?;
        }
        step(
            "tracing_on",
            std::fs::write(instance.join("tracing_on"), "1"),
        )?;
        let ran = Command::new("sh")
            .current_dir(dir)
            .args(["-c", WORKLOAD])
            .status();
        step(
            "tracing_off",
            std::fs::write(instance.join("tracing_on"), "0"),
        )?;
        match ran {
            Ok(status) if status.success() => {}
            other => return Err(format!("the workload: {other:?}")),
        }
        std::fs::read_to_string(instance.join("trace")).map_err(|e| format!("reading trace: {e}"))
    })();
    let _ = std::fs::remove_dir(&instance);
    captured
}

#[test]
fn ftrace_text_interrupts_equal_a_walk_of_the_text() {
    let project = Project::new();
    // Three tries: a busy CI machine once failed one; each failure says
    // its step.
    let mut failures = Vec::new();
    let text = (1..=3).find_map(|attempt| {
        ftrace_capture(project.path(), attempt)
            .map_err(|e| failures.push(e))
            .ok()
    });
    let Some(text) = text else {
        skip(&format!(
            "an ftrace instance under /sys/kernel/tracing ({failures:?})"
        ));
        return;
    };
    let walked = walk(&text);
    let runs: u64 = walked.values().map(|r| r.0).sum();
    assert!(runs > 0, "the workload raised no interrupt");
    std::fs::write(project.path().join("irq_ftrace.txt"), &text).expect("write");
    let imported = project.json(&["import", "irq_ftrace.txt"]);
    assert_eq!(imported["kind"], "ftrace_text", "{imported}");
    let by_name = &imported["artifacts"][0]["metadata"]["events_by_name"];
    let entries = text
        .lines()
        .filter(|l| l.contains(" softirq_entry: "))
        .count();
    assert_eq!(by_name["softirq_entry"], entries, "{by_name}");
    assert_eq!(imported_interrupts(&project), walked);
    check_summary(&project, &walked);
}

/// Protobuf fields of `bytes`: `(number, varint or length-delimited
/// payload)`; fixed-width fields are skipped.
fn proto_fields(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let c = *b.get(*at)?;
            *at += 1;
            v |= u64::from(c & 0x7f) << shift;
            if c < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(key) = varint(bytes, &mut at) {
        let start = at;
        let len = match key & 7 {
            0 => {
                varint(bytes, &mut at);
                0
            }
            1 => 8,
            2 => varint(bytes, &mut at).expect("length") as usize,
            5 => 4,
            other => panic!("wire type {other}"),
        };
        let body = if key & 7 == 2 { at } else { start };
        at = body.max(at) + len;
        out.push((key >> 3, bytes.get(body..at).unwrap_or(&[])));
    }
    out
}

/// systing (a BPF tracer writing Perfetto protobuf) records softirqs and
/// hard interrupts as `FtraceEvent.softirq_entry` (24) / `_exit` (25) and
/// `irq_handler_entry` (36) / `_exit` (37): one `interrupt` row per entry.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn perfetto_ftrace_interrupts_are_interrupt_rows() {
    let file = flameox_tests::corpus().join("perfetto/systing_sched_softirq_perfsamples.pb");
    let bytes = std::fs::read(&file).expect("corpus");
    let mut entries: BTreeMap<u64, u64> = BTreeMap::new();
    for (_, packet) in proto_fields(&bytes).into_iter().filter(|(f, _)| *f == 1) {
        for (_, bundle) in proto_fields(packet).into_iter().filter(|(f, _)| *f == 1) {
            for (_, event) in proto_fields(bundle).into_iter().filter(|(f, _)| *f == 2) {
                for (field, _) in proto_fields(event) {
                    *entries.entry(field).or_default() += 1;
                }
            }
        }
    }
    let (softirqs, irqs) = (entries[&24], entries.get(&36).copied().unwrap_or(0));
    assert_eq!(softirqs, entries[&25]);
    assert!(softirqs > 4000 && irqs > 0, "{entries:?}");
    let project = Project::new();
    project.json(&["import", file.to_str().expect("utf-8 path")]);
    let imported = imported_interrupts(&project);
    let count = |kind: &str| -> u64 {
        imported
            .iter()
            .filter(|((_, k), _)| *k == kind)
            .map(|(_, (n, _))| n)
            .sum()
    };
    assert_eq!(count("softirq"), softirqs, "{imported:?}");
    assert_eq!(count("irq"), irqs, "{imported:?}");
    let summary = project.json(&["analyze", "summary", "latest"]);
    let interrupts = &summary["cpu"]["interrupts"];
    let softirq_ns: i64 = imported
        .iter()
        .filter(|((_, k), _)| *k == "softirq")
        .map(|(_, (_, ns))| ns)
        .sum();
    assert_eq!(interrupts["softirq_ns"], softirq_ns, "{summary}");
}
