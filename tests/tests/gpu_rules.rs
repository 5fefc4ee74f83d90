//! The declared anti-pattern rules `summarize_target` names, each on a
//! corpus trace that has the pattern and one that does not (the straggler
//! rule's cases are in `gpu_diagnosis`). Starvation is
//! checked against the device-gap model of `gpu_gaps` (built here from the
//! Kineto JSON): the starved share of the span is the model's.

use flameox_tests::{Project, corpus_json};
use serde_json::Value;

use crate::gpu_gaps::{gaps, trace};

/// The rule's threshold, as `recipes/src/gpu_diagnosis/rules.rs` declares it.
const STARVED_PCT: f64 = 20.0;

/// The summary of a corpus trace, and the model's starved and stalled time
/// of each device over the summary's span: device → (starved, stalled,
/// span ns).
fn summary_and_model(path: &str) -> (Value, Vec<(i64, i64, i64, i64)>) {
    let project = Project::new();
    let run = project.import_corpus(path);
    let summary = project.json(&["analyze", "summary", &run]);
    let t = trace(&corpus_json(path));
    let model = gaps(&t, 1);
    let mut out = Vec::new();
    for d in summary["gpu"]["devices"].as_array().expect("devices") {
        let device = d["device"].as_i64().expect("device");
        let (from, to) = (
            d["span"]["start_ns"].as_i64().expect("start"),
            d["span"]["end_ns"].as_i64().expect("end"),
        );
        let clipped = |class: &str| -> i64 {
            model
                .iter()
                .filter(|g| g.device == device && g.class() == class)
                .map(|g| (g.end.min(to) - g.start.max(from)).max(0))
                .sum()
        };
        out.push((device, clipped("starved"), clipped("stalled"), to - from));
    }
    (summary, out)
}

fn diagnosis<'a>(summary: &'a Value, rule: &str) -> Option<&'a Value> {
    summary["gpu"]["diagnoses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["rule"] == rule)
}

/// AlexNet's GPU waits on its host for 30 % of the trace: the rule fires
/// with the model's starved time and share, the headline names it, and
/// the first next call is the gaps view that shows what the host did.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn starvation_fires_where_the_host_launched_late() {
    let (summary, model) = summary_and_model("kineto/hta_alexnet_a100.pt.trace.json.gz");
    let (device, starved, stalled, span) = model[0];
    let pct = starved as f64 * 100.0 / span as f64;
    assert!(pct >= STARVED_PCT && starved >= stalled, "{model:?}");
    let d = diagnosis(&summary, "gpu_starvation").expect("gpu_starvation fires");
    let evidence = d["evidence"].as_str().expect("evidence");
    for words in [
        format!("GPU {device} starved {:.2} ms", starved as f64 / 1e6),
        format!("{pct:.1} % of the trace ({:.2} ms)", span as f64 / 1e6),
    ] {
        assert!(evidence.contains(&words), "{words} in {evidence}");
    }
    assert_eq!(d["operation"], "analyze_gpu_gaps", "{d}");
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("diagnosed gpu_starvation"), "{headline}");
    assert_eq!(
        summary["next"][0]["operation"], "analyze_gpu_gaps",
        "{summary}"
    );
}

/// A CUDA-graph NCCL rank idles mostly with work queued (stalled), not
/// for its host: no starvation, though it has starved gaps.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn starvation_is_quiet_where_queued_work_waited() {
    let (summary, model) = summary_and_model("kineto/hta_cudagraph_nccl_a100_rank0of16.json.gz");
    assert!(
        model.iter().all(|&(_, starved, stalled, span)| {
            starved > 0
                && (starved < stalled || (starved as f64) * 100.0 / (span as f64) < STARVED_PCT)
        }),
        "{model:?}"
    );
    assert!(diagnosis(&summary, "gpu_starvation").is_none(), "{summary}");
    // The rules that do fire still lead the summary.
    assert!(
        diagnosis(&summary, "exposed_communication").is_some(),
        "{summary}"
    );
}

/// The value a fired rule measured, read back from its section of the
/// same answer (whose figures the section tests check against SQL and
/// walks of the raw files).
fn measured_in_section(a: &Value, rule: &str) -> Option<f64> {
    let f = |v: &Value| v.as_f64();
    match rule {
        "sync_after_launches" => f(&a["copies"]["host_waits"][0]["syncs_per_launch"]),
        "pageable_copies" => f(&a["copies"]["pageable_bytes"]),
        "underfilled_grids" => a["geometry"]
            .as_array()?
            .iter()
            .filter_map(|d| f(&d["underfilled_pct_of_compute"]))
            .reduce(f64::max),
        "exposed_communication" => {
            let c = &a["collectives"];
            Some(f(&c["exposed_after_last_arrival_ns"])? * 100.0 / f(&c["time_ns"])?)
        }
        _ => None,
    }
}

/// Every rule `analyze_gpu_diagnosis` declares, on a corpus trace that has
/// the pattern and one that does not: it fires exactly when the value its
/// section measured reaches its threshold. DLRM's collectives are mostly
/// waits for its late rank 7, so their exposed transfer is small.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn each_rule_fires_on_a_trace_with_its_pattern_and_not_on_one_without() {
    let cases: [(&str, &str, &str, bool); 8] = [
        (
            "sync_after_launches",
            "copies",
            "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
            true,
        ),
        (
            "sync_after_launches",
            "copies",
            "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
            false,
        ),
        (
            "pageable_copies",
            "copies",
            "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
            true,
        ),
        (
            "pageable_copies",
            "copies",
            "kineto/tracelens_h100_bert_small.json.gz",
            false,
        ),
        (
            "underfilled_grids",
            "geometry",
            "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
            true,
        ),
        (
            "underfilled_grids",
            "geometry",
            "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
            false,
        ),
        (
            "exposed_communication",
            "collectives",
            "kineto/hta_nccl_a100_rank0of2.json.gz",
            true,
        ),
        (
            "exposed_communication",
            "collectives",
            "kineto/param_dlrm_8rank",
            false,
        ),
    ];
    let project = Project::new();
    let mut runs: std::collections::BTreeMap<&str, String> = std::collections::BTreeMap::new();
    for (rule, section, path, fires) in cases {
        let run = runs
            .entry(path)
            .or_insert_with(|| project.import_corpus(path))
            .clone();
        let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", section]);
        let fired = a["diagnoses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["rule"] == rule);
        assert_eq!(
            fired.is_some(),
            fires,
            "{rule} on {path}: {}",
            a["diagnoses"]
        );
        let threshold = fired.map_or(f64::NAN, |d| d["threshold"].as_f64().unwrap_or(f64::NAN));
        match (fired, measured_in_section(&a, rule)) {
            (Some(d), Some(m)) => {
                assert!(
                    (d["measured"].as_f64().unwrap_or(f64::NAN) - m).abs() < 1e-6,
                    "{d}"
                );
                assert!(m >= threshold, "{d}");
                assert_eq!(d["section"], section, "{d}");
            }
            (Some(d), None) => panic!("{rule} fired on {path} with no value in its section: {d}"),
            (None, m) => {
                let threshold = match rule {
                    "sync_after_launches" => 0.5,
                    "pageable_copies" => 1_048_576.0,
                    "underfilled_grids" => 10.0,
                    _ => 50.0,
                };
                assert!(m.is_none_or(|m| m < threshold), "{rule} on {path}: {m:?}");
            }
        }
    }
}
