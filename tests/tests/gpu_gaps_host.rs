//! What the launching thread did during a GPU gap when it made no CUDA
//! call, on the CloverLeaf Nsight export (which traced OS runtime calls and
//! sampled CPU stacks), checked with plain SQL on the export: the CPU
//! samples the answer counts in each gap are the export's samples of that
//! thread in that gap, and a gap said to be spent in an OS call names the
//! call that overlapped it most on that thread.

use flameox_tests::{Project, corpus};
use rusqlite::{Connection, OpenFlags};

const EXPORT: &str = "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite";

fn scalar(c: &Connection, sql: &str, args: [i64; 3]) -> i64 {
    c.query_row(sql, args, |r| r.get(0)).expect(sql)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_gap_outside_cuda_calls_says_what_the_launching_thread_did() {
    let path = corpus().join(EXPORT);
    let c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    let project = Project::new();
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run");
    let a = project.json(&["analyze", "gpu-gaps", run, "--limit", "10"]);
    let gaps = a["gaps"].as_array().expect("gaps");
    let (mut sampled, mut os_calls) = (0, 0);
    for g in gaps {
        let Some(tid) = g["launched_by"]["tid"].as_i64() else {
            continue;
        };
        let (start, end) = (
            g["start_ns"].as_i64().expect("start"),
            g["end_ns"].as_i64().expect("end"),
        );
        let samples = scalar(
            &c,
            "SELECT count(*) FROM COMPOSITE_EVENTS
             WHERE (globalTid & 16777215) = ?1 AND start >= ?2 AND start < ?3",
            [tid, start, end],
        );
        let host = &g["host"];
        assert_eq!(
            host["samples"]["samples"].as_i64().unwrap_or(0),
            samples,
            "{g}"
        );
        sampled += samples;
        let Some(text) = host["busy_elsewhere"].as_str() else {
            continue;
        };
        if text.starts_with("no CUDA call") {
            // The OS call with the most time inside the gap on that thread.
            let name: String = c
                .query_row(
                    "SELECT s.value FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
                     WHERE (o.globalTid & 16777215) = ?1 AND o.start < ?3 AND o.\"end\" > ?2
                     ORDER BY min(o.\"end\", ?3) - max(o.start, ?2) DESC LIMIT 1",
                    [tid, start, end],
                    |r| r.get(0),
                )
                .expect("an OS call in the gap");
            assert!(text.contains(&format!(" in {name} (os_runtime)")), "{text}");
            os_calls += 1;
        } else {
            assert!(text.contains("no call recorded"), "{text}");
            assert!(host["covered_share"].as_f64() < Some(0.5), "{g}");
        }
    }
    assert!(sampled > 0, "some gap has CPU samples");
    assert!(os_calls > 0, "some gap is spent in an OS call");
}
