//! The host tables of the corpus Nsight exports — OS runtime calls
//! (`OSRT_API`) and CPU samples (`COMPOSITE_EVENTS` + `SAMPLING_CALLCHAINS`)
//! — against plain SQL on the same files: every OS call becomes an
//! `os_runtime` slice with its name and duration, and every sample a timed
//! `cpu.samples` row on its thread whose stack's leaf is the callchain's
//! depth-0 symbol.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use flameox_extractors::{EvidenceTable as T, NoObserver, extract_nsight_sqlite};
use rusqlite::{Connection, OpenFlags};

const FILES: [&str; 3] = [
    "nsys/flameox_smoke_nsys2025.5.2.sqlite",
    "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
    "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
];

fn has_table(c: &Connection, name: &str) -> bool {
    c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .expect("sqlite_master")
        > 0
}

/// `name → (calls, summed ns)` from SQL rows of (name, count, sum).
fn grouped(c: &Connection, sql: &str) -> BTreeMap<String, (i64, i64)> {
    let mut stmt = c.prepare(sql).expect(sql);
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .expect(sql);
    rows.map(|r| r.expect("row")).collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn os_runtime_calls_and_cpu_samples_match_plain_sql() {
    let mut checked = (0, 0);
    for rel in FILES {
        let path = corpus(rel);
        let c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
        let mut sink = MemorySink::default();
        let summary = extract_nsight_sqlite(Path::new(&path), &options(), &mut sink, &NoObserver)
            .expect("extract");

        let osrt = has_table(&c, "OSRT_API");
        // The flag says the evidence is there: a table with rows.
        let osrt_rows = osrt
            && c.query_row("SELECT count(*) FROM OSRT_API", [], |r| r.get::<_, i64>(0))
                .is_ok_and(|n| n > 0);
        assert_eq!(
            summary.coverage.get("os_runtime"),
            Some(&osrt_rows),
            "{rel}"
        );
        let want = if osrt {
            grouped(
                &c,
                "SELECT s.value, count(*), sum(o.\"end\" - o.start)
                 FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId GROUP BY s.value",
            )
        } else {
            BTreeMap::new()
        };
        let kind = sink.strs(T::TraceEvents, "kind");
        let name = sink.strs(T::TraceEvents, "name");
        let dur = sink.i64s(T::TraceEvents, "dur_ns");
        let mut got: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for i in (0..kind.len()).filter(|&i| kind[i].as_deref() == Some("os_runtime")) {
            let slot = got.entry(name[i].clone().unwrap_or_default()).or_default();
            slot.0 += 1;
            slot.1 += dur[i].unwrap_or(0);
        }
        assert_eq!(got, want, "{rel}: os_runtime slices");
        checked.0 += want.values().map(|v| v.0).sum::<i64>();

        let sampled = has_table(&c, "COMPOSITE_EVENTS") && has_table(&c, "SAMPLING_CALLCHAINS");
        assert_eq!(summary.coverage.get("cpu_samples"), Some(&sampled), "{rel}");
        if !sampled {
            continue;
        }
        // Per (tid, leaf symbol): samples, from SQL.
        let mut stmt = c
            .prepare(
                "SELECT c.globalTid & 16777215, s.value, count(*)
                 FROM COMPOSITE_EVENTS c
                 JOIN SAMPLING_CALLCHAINS k ON k.id = c.id AND k.stackDepth = 0
                 JOIN StringIds s ON s.id = k.symbol
                 GROUP BY 1, 2",
            )
            .expect("samples");
        let want: BTreeMap<(i64, String), i64> = stmt
            .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))
            .expect("samples")
            .map(|r| r.expect("row"))
            .collect();
        // The same from the evidence: samples → leaf node → frame.
        let frame_of_node: BTreeMap<i64, i64> = sink
            .i64s(T::StackNodes, "stack_id")
            .into_iter()
            .zip(sink.i64s(T::StackNodes, "frame_id"))
            .filter_map(|(s, f)| Some((s?, f?)))
            .collect();
        let function: BTreeMap<i64, String> = sink
            .i64s(T::Frames, "frame_id")
            .into_iter()
            .zip(sink.strs(T::Frames, "function"))
            .filter_map(|(f, n)| Some((f?, n?)))
            .collect();
        let metric = sink.strs(T::Samples, "metric");
        let ts = sink.i64s(T::Samples, "ts_ns");
        let tid = sink.i64s(T::Samples, "tid");
        let stack = sink.i64s(T::Samples, "stack_id");
        let mut got: BTreeMap<(i64, String), i64> = BTreeMap::new();
        for i in (0..metric.len()).filter(|&i| metric[i].as_deref() == Some("cpu.samples")) {
            assert!(ts[i].is_some(), "{rel}: a CPU sample keeps its time");
            let leaf = stack[i]
                .and_then(|s| frame_of_node.get(&s))
                .and_then(|f| function.get(f))
                .cloned()
                .unwrap_or_default();
            *got.entry((tid[i].unwrap_or(-1), leaf)).or_default() += 1;
        }
        assert!(!want.is_empty(), "{rel} has samples");
        assert_eq!(got, want, "{rel}: CPU samples per thread and leaf");
        checked.1 += want.values().sum::<i64>();
        // Kernels and CUDA calls stay the default view.
        assert_eq!(
            summary
                .metadata
                .get("primary_metric")
                .and_then(|v| v.as_str()),
            Some("trace.wall_ns"),
            "{rel}"
        );
    }
    // (2,485 OS calls and 6,982 samples in the three exports.)
    assert!(checked.0 > 0 && checked.1 > 0, "{checked:?}");
}
