//! pprof profiles through the real binary: content detection picks the
//! pprof extractor for the gzipped Go profiles, hotspots per sample-type
//! metric match an independent wire decode (`pprof_wire`, no prost), the
//! default metric is the documented one, and the stack drill-down agrees.

#[path = "../../extractors/tests/pprof_wire/mod.rs"]
mod pprof_wire;

use std::io::Read;

use flameox_tests::{Project, corpus};

fn gunzip(path: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("corpus file"))
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn pprof_corpus_files_import_and_answer_hotspots() {
    let project = Project::new();
    for (rel, metric, column, default_metric, all_metrics) in [
        (
            "stacks/go1.19_cpu.pprof.pb.gz",
            "cpu.time_ns",
            1,
            "cpu.samples",
            &["cpu.samples", "cpu.time_ns"][..],
        ),
        (
            "stacks/go1.19_allocs.pprof.pb.gz",
            "memory.alloc_bytes",
            1,
            "memory.alloc_bytes",
            &[
                "memory.alloc_bytes",
                "memory.alloc_objects",
                "memory.inuse_bytes",
                "memory.inuse_objects",
            ][..],
        ),
    ] {
        let path = corpus().join(rel);
        let raw = pprof_wire::parse(&gunzip(&path));
        let total = raw.totals()[column];
        // Hotspots rank functions (lines merged): the model groups by
        // (function, file) likewise, keeping the smallest line.
        let mut values: std::collections::BTreeMap<_, (i64, i64)> =
            std::collections::BTreeMap::new();
        let mut first_line: std::collections::BTreeMap<_, Option<i64>> =
            std::collections::BTreeMap::new();
        for ((function, file, line), v) in raw.frame_values(column) {
            let key = (function, file);
            let slot = values.entry(key.clone()).or_default();
            slot.0 += v.0;
            slot.1 += v.1;
            let at = first_line.entry(key).or_insert(line);
            *at = match (*at, line) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let values: std::collections::BTreeMap<_, (i64, i64)> = values
            .into_iter()
            .map(|((function, file), v)| {
                let line = first_line[&(function.clone(), file.clone())];
                ((function, file, line), v)
            })
            .collect();
        let best = values.values().map(|v| v.0).max().expect("frames");
        let leaders: Vec<_> = values.iter().filter(|(_, v)| v.0 == best).collect();

        let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
        assert_eq!(imported["kind"], "pprof", "{rel}");
        assert_eq!(imported["producer"], "go", "{rel}");
        assert_eq!(
            imported["rows"]["samples"].as_u64().map(|n| n > 0),
            Some(true)
        );
        let run = imported["run_id"].as_str().expect("run").to_owned();

        // Without --metric: the engine's preference (cpu.samples), else the
        // alphabetically first metric.
        let hot = project.json(&["analyze", "hotspots", &run, "--limit", "1"]);
        assert_eq!(hot["metric"], default_metric, "{rel}");
        let mut available: Vec<String> = hot["available_metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .map(|m| m.as_str().expect("metric").to_owned())
            .collect();
        available.sort();
        assert_eq!(available, all_metrics, "{rel}");

        let hot = project.json(&[
            "analyze", "hotspots", &run, "--metric", metric, "--limit", "1000",
        ]);
        assert_eq!(hot["metric"], metric);
        assert_eq!(hot["total_self"].as_i64(), Some(total), "{rel}");
        let rows = hot["rows"].as_array().expect("rows");
        assert_eq!(
            rows.len(),
            values.values().filter(|v| v.0 != 0 || v.1 != 0).count()
        );
        let top = &rows[0];
        assert_eq!(top["self_value"].as_i64(), Some(best), "{rel}");
        if let [((function, file, line), _)] = leaders.as_slice() {
            assert_eq!(top["function"].as_str(), Some(function.as_str()), "{rel}");
            assert_eq!(top["file"].as_str(), file.as_deref(), "{rel}");
            assert_eq!(top["line"].as_i64(), *line, "{rel}");
        }

        let frame = top["frame"].as_str().expect("frame key");
        let examples = project.json(&[
            "stacks", "examples", &run, frame, "--metric", metric, "--limit", "1000",
        ]);
        assert_eq!(examples["metric"], metric);
        let weight: i64 = examples["stacks"]
            .as_array()
            .expect("stacks")
            .iter()
            .filter(|s| s["frames"].as_array().and_then(|f| f.last()) == Some(&top["function"]))
            .map(|s| s["weight"].as_i64().unwrap_or(0))
            .sum();
        assert_eq!(
            weight, best,
            "{rel}: leaf stacks weigh the frame's self value"
        );
    }
}
