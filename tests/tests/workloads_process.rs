//! Process execution with real programs (`python3 -c`, a shell-free argv):
//! the tree is killed on timeout and cancellation with no survivors, exit
//! codes and signals are reported, output is bounded, peak RSS of one
//! process and of a tree is measured, CPU time is counted, and the child
//! environment is filtered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use flameox_engine::error::ErrorCode;
use flameox_engine::execution::env::{child_environment, child_environment_from, resolve_program};
use flameox_engine::execution::tree::parse_stat;
use flameox_engine::execution::{
    ProcessOutcome, ProcessSpec, Supervision, Termination, Unsupervised, run_process,
};
use flameox_tests::workloads::process_alive;

const MIB: u64 = 1 << 20;

fn python_spec(code: &str, timeout: Duration) -> ProcessSpec {
    let python = resolve_program("python3").expect("python3 on PATH");
    let mut spec = ProcessSpec::new(
        python,
        vec!["python3".into(), "-c".into(), code.into()],
        std::env::temp_dir(),
        timeout,
    );
    spec.env = child_environment(&BTreeMap::new());
    spec
}

fn run(code: &str, timeout: Duration) -> ProcessOutcome {
    run_process(&python_spec(code, timeout), &Unsupervised).expect("run")
}

/// Every live process whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
                .is_some_and(|(pgrp, _, state)| pgrp == pgid as i32 && state != 'Z')
        })
        .collect()
}

fn printed_pids(outcome: &ProcessOutcome) -> Vec<u32> {
    String::from_utf8_lossy(&outcome.stdout.bytes)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// A parent that starts two grandchildren ignoring SIGTERM, prints their
/// pids and its own, then sleeps (so does each grandchild).
const TREE: &str = r#"
import os, signal, subprocess, sys, time
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
time.sleep(0.3)
print(os.getpid(), *[k.pid for k in kids], flush=True)
time.sleep(120)
"#;

#[test]
fn timeout_kills_the_whole_tree_even_children_that_ignore_sigterm() {
    let mut spec = python_spec(TREE, Duration::from_secs(4));
    spec.grace = Duration::from_millis(300);
    let started = Instant::now();
    let outcome = run_process(&spec, &Unsupervised).expect("run");
    assert_eq!(outcome.termination, Termination::TimedOut);
    assert!(outcome.escalated_to_sigkill, "grandchildren ignore SIGTERM");
    assert!(started.elapsed() < Duration::from_secs(15));
    let pids = printed_pids(&outcome);
    assert_eq!(pids.len(), 3, "stdout: {:?}", outcome.stdout);
    assert!(outcome.max_processes >= 3, "{}", outcome.max_processes);
    for pid in pids {
        assert!(!process_alive(pid), "process {pid} survived the timeout");
    }
    assert!(group_members(outcome.pid).is_empty());
    // The leader died of a signal, reported as such.
    assert!(outcome.signal.is_some() && outcome.exit_code.is_none());
}

struct CancelAfter {
    at: Instant,
    asked: AtomicBool,
}

impl Supervision for CancelAfter {
    fn cancelled(&self) -> bool {
        self.asked.store(true, Ordering::SeqCst);
        Instant::now() >= self.at
    }
}

#[test]
fn cancellation_kills_the_tree() {
    let spec = python_spec(TREE, Duration::from_secs(60));
    let cancel = CancelAfter {
        at: Instant::now() + Duration::from_secs(3),
        asked: AtomicBool::new(false),
    };
    let outcome = run_process(&spec, &cancel).expect("run");
    assert_eq!(outcome.termination, Termination::Cancelled);
    assert!(cancel.asked.load(Ordering::SeqCst));
    for pid in printed_pids(&outcome) {
        assert!(!process_alive(pid), "process {pid} survived cancellation");
    }
    assert!(group_members(outcome.pid).is_empty());
}

#[test]
fn background_children_left_behind_by_a_finished_leader_are_killed() {
    let outcome = run(
        r#"
import subprocess, sys
k = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(k.pid, flush=True)
"#,
        Duration::from_secs(30),
    );
    assert_eq!(outcome.termination, Termination::Exited);
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.survivors_killed, 1);
    let pids = printed_pids(&outcome);
    assert_eq!(pids.len(), 1);
    assert!(!process_alive(pids[0]));
}

#[test]
fn exit_codes_and_signals_are_reported() {
    let failed = run("import sys; sys.exit(3)", Duration::from_secs(30));
    assert_eq!(
        (failed.termination, failed.exit_code, failed.signal),
        (Termination::Exited, Some(3), None)
    );
    let aborted = run("import os; os.abort()", Duration::from_secs(30));
    assert_eq!(aborted.termination, Termination::Signaled);
    assert_eq!(aborted.signal, Some(6), "SIGABRT");
    assert_eq!(aborted.exit_code, None);
    let ok = run("print('hi')", Duration::from_secs(30));
    assert_eq!(
        (ok.exit_code, ok.stdout.bytes.as_slice()),
        (Some(0), b"hi\n".as_slice())
    );
    assert!(ok.wall_time_ns > 0 && ok.wall_time_ns < 30_000_000_000);
}

#[test]
fn output_is_bounded_and_truncation_is_marked() {
    let mut spec = python_spec(
        "import sys; sys.stdout.write('x' * (5 << 20)); sys.stderr.write('e' * 1000)",
        Duration::from_secs(30),
    );
    spec.output_limit = MIB as usize;
    let outcome = run_process(&spec, &Unsupervised).expect("run");
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.stdout.bytes.len() as u64, MIB);
    assert_eq!(outcome.stdout.total_bytes, 5 * MIB);
    assert!(outcome.stdout.truncated && outcome.stdout.complete);
    assert_eq!(outcome.stderr.total_bytes, 1000);
    assert!(!outcome.stderr.truncated);
}

#[test]
fn peak_rss_of_one_process_is_measured_within_tolerance() {
    // 100 MiB of written (so resident) bytes, held for 0.5 s.
    let outcome = run(
        "import time; x = b'x' * (100 << 20); time.sleep(0.5); print(len(x))",
        Duration::from_secs(60),
    );
    assert_eq!(outcome.exit_code, Some(0));
    eprintln!(
        "one process: tree {} KiB, rusage {} KiB, {} samples",
        outcome.peak_tree_rss_bytes / 1024,
        outcome.rusage_max_rss_bytes / 1024,
        outcome.rss_samples
    );
    // Tolerance (docs/workloads.md): at least the 100 MiB, at most 100 MiB +
    // 60 MiB of interpreter and allocator overhead.
    for (what, value) in [
        ("tree", outcome.peak_tree_rss_bytes),
        ("rusage", outcome.rusage_max_rss_bytes),
        ("peak", outcome.peak_rss_bytes),
    ] {
        assert!(
            (100 * MIB..=160 * MIB).contains(&value),
            "{what} peak {} MiB outside 100..=160 MiB",
            value / MIB
        );
    }
}

#[test]
fn peak_rss_of_a_tree_sums_its_processes() {
    // Two children hold 80 MiB each at the same time; the parent waits.
    let outcome = run(
        r#"
import subprocess, sys
code = "import time; x = b'x' * (80 << 20); time.sleep(1.0)"
kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
for k in kids: k.wait()
"#,
        Duration::from_secs(60),
    );
    assert_eq!(outcome.exit_code, Some(0));
    eprintln!(
        "tree: tree {} KiB, rusage {} KiB",
        outcome.peak_tree_rss_bytes / 1024,
        outcome.rusage_max_rss_bytes / 1024
    );
    assert!(
        outcome.peak_tree_rss_bytes >= 160 * MIB,
        "tree peak {} MiB < 160 MiB",
        outcome.peak_tree_rss_bytes / MIB
    );
    // ru_maxrss only knows the largest single process.
    assert!(outcome.rusage_max_rss_bytes < 130 * MIB);
    assert!(outcome.rusage_max_rss_bytes >= 80 * MIB);
    assert_eq!(outcome.peak_rss_bytes, outcome.peak_tree_rss_bytes);
}

#[test]
fn cpu_time_counts_the_waited_tree() {
    let outcome = run(
        r#"
import subprocess, sys, time
busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
subprocess.run([sys.executable, "-c", busy])
t = time.process_time()
while time.process_time() - t < 0.2: pass
"#,
        Duration::from_secs(60),
    );
    assert_eq!(outcome.exit_code, Some(0));
    let cpu_s = outcome.cpu_time_ns as f64 / 1e9;
    assert!(cpu_s >= 0.55, "cpu {cpu_s} s < 0.6 s of busy loops");
    assert!(outcome.cpu_time_ns <= outcome.wall_time_ns * 2 + 200_000_000);
    assert_eq!(
        outcome.cpu_time_ns,
        outcome.user_cpu_ns + outcome.system_cpu_ns
    );
}

#[test]
fn environment_is_filtered_to_the_allowlist_plus_declared_variables() {
    let inherited = vec![
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        ("LC_ALL".to_owned(), "C".to_owned()),
        ("AWS_SECRET_ACCESS_KEY".to_owned(), "hunter2".to_owned()),
        ("LD_PRELOAD".to_owned(), "/evil.so".to_owned()),
    ];
    let declared = BTreeMap::from([("MODE".to_owned(), "fast".to_owned())]);
    let mut spec = python_spec(
        "import json, os; print(json.dumps(dict(os.environ)))",
        Duration::from_secs(30),
    );
    spec.env = child_environment_from(inherited, &declared);
    let outcome = run_process(&spec, &Unsupervised).expect("run");
    let env: BTreeMap<String, String> =
        serde_json::from_slice(&outcome.stdout.bytes).expect("env json");
    assert_eq!(env.get("MODE").map(String::as_str), Some("fast"));
    assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C"));
    assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
    assert!(!env.contains_key("LD_PRELOAD"));
}

#[test]
fn a_program_that_cannot_start_is_a_process_failure() {
    let spec = ProcessSpec::new(
        PathBuf::from("/nonexistent/flameox-program"),
        vec!["flameox-program".into()],
        Path::new("/").to_path_buf(),
        Duration::from_secs(5),
    );
    let err = run_process(&spec, &Unsupervised).unwrap_err();
    assert_eq!(err.code, ErrorCode::ProcessFailed);
    assert_eq!(err.exit_code(), 4);
}
