//! `analyze gpu-diagnosis` on a rocprofv3 document against a walk of its
//! JSON done here: the GPU's compute units from its agent, each dispatch's
//! blocks (work items over the workgroup, per dimension, rounded up), the
//! compute kernels with fewer blocks than compute units, and the RCCL
//! kernels the collectives section counts.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus_json};
use serde_json::Value;

const PATH: &str = "misc/rocprofv3_908_results.json.gz";

/// What the walk finds on GPU 0.
#[derive(Debug, Default)]
struct Walk {
    cus: i64,
    product: String,
    compute: (u64, i64),
    underfilled: (u64, i64),
    rccl: (u64, i64),
}

fn walk() -> Walk {
    let doc = corpus_json(PATH);
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let agents: BTreeMap<u64, &Value> = tool["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter(|a| a["type"] == 2)
        .map(|a| (a["id"]["handle"].as_u64().expect("id"), a))
        .collect();
    let names: BTreeMap<u64, &str> = tool["kernel_symbols"]
        .as_array()
        .expect("symbols")
        .iter()
        .map(|k| {
            (
                k["kernel_id"].as_u64().expect("id"),
                k["formatted_kernel_name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let mut w = Walk::default();
    for d in tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .expect("dispatches")
    {
        let info = &d["dispatch_info"];
        let agent = agents[&info["agent_id"]["handle"].as_u64().expect("agent")];
        if agent["gpu_index"] != 0 {
            continue;
        }
        w.cus = agent["cu_count"].as_i64().expect("cu_count");
        w.product = agent["product_name"].as_str().unwrap_or("").to_owned();
        let dur = d["end_timestamp"].as_i64().expect("end")
            - d["start_timestamp"].as_i64().expect("start");
        let name = names[&info["kernel_id"].as_u64().expect("kernel id")].to_ascii_lowercase();
        if name.contains("nccl") || name.contains("rccl") {
            w.rccl = (w.rccl.0 + 1, w.rccl.1 + dur);
            continue;
        }
        let blocks: i64 = ["x", "y", "z"]
            .iter()
            .map(|k| {
                let items = info["grid_size"][k].as_i64().unwrap_or(1).max(1);
                let group = info["workgroup_size"][k].as_i64().unwrap_or(1).max(1);
                (items + group - 1) / group
            })
            .product();
        w.compute = (w.compute.0 + 1, w.compute.1 + dur);
        if blocks < w.cus {
            w.underfilled = (w.underfilled.0 + 1, w.underfilled.1 + dur);
        }
    }
    w
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_rocprofv3_run_gets_geometry_against_its_cus_and_rccl_collectives() {
    let w = walk();
    assert!(w.rccl.0 > 0 && w.underfilled.0 > 0, "{w:?}");
    let project = Project::new();
    let run = project.import_corpus(PATH);
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--limit", "1"]);
    let g = &a["geometry"][0];
    assert_eq!(g["sm_count"].as_i64(), Some(w.cus), "{g}");
    assert_eq!(g["sm_count_source"], "device properties", "{g}");
    assert_eq!(
        (g["compute_kernels"].as_u64(), g["compute_ns"].as_i64()),
        (Some(w.compute.0), Some(w.compute.1)),
        "{g}"
    );
    assert_eq!(
        (
            g["underfilled_kernels"].as_u64(),
            g["underfilled_ns"].as_i64()
        ),
        (Some(w.underfilled.0), Some(w.underfilled.1)),
        "{g}"
    );
    // RCCL kernels are collectives, not compute.
    let c = &a["collectives"];
    assert_eq!(
        (c["kernels"].as_u64(), c["time_ns"].as_i64()),
        (Some(w.rccl.0), Some(w.rccl.1)),
        "{c}"
    );
    // The device is named, so MFU says why it has none: no operators.
    let m = &a["mfu"]["without_flop"];
    assert_eq!(m["device_name"], w.product.as_str(), "{m}");
    assert!(
        a["mfu"]["artifacts"].as_array().is_some_and(Vec::is_empty),
        "{}",
        a["mfu"]
    );
    // One rank's collectives cannot tell transfer from waiting: said so.
    let exposed = a["diagnoses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["rule"] == "exposed_communication")
        .expect("exposed_communication");
    assert!(
        exposed["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("includes waiting for the other ranks")),
        "{exposed}"
    );
}
