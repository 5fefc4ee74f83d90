//! rocprofv3: AMD's rocprofiler-sdk JSON imports by content
//! into the same device evidence as a CUDA trace, and the GPU answers hold
//! what this test computes with its own walk over the JSON: kernel
//! dispatches per GPU and the union of their intervals (busy time).

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus, corpus_json};

/// Per GPU index: dispatches, and the union of their [start, end) in ns.
pub(crate) fn walk() -> BTreeMap<i64, (usize, i64, (i64, i64))> {
    let doc = corpus_json("misc/rocprofv3_908_results.json.gz");
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let gpu_of: BTreeMap<u64, i64> = tool["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter(|a| a["type"] == 2)
        .map(|a| {
            (
                a["id"]["handle"].as_u64().expect("id"),
                a["gpu_index"].as_i64().expect("gpu"),
            )
        })
        .collect();
    let mut intervals: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for d in tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .expect("dispatches")
    {
        let agent = d["dispatch_info"]["agent_id"]["handle"]
            .as_u64()
            .expect("agent");
        let start = d["start_timestamp"].as_i64().expect("start");
        let end = d["end_timestamp"].as_i64().expect("end");
        intervals
            .entry(gpu_of[&agent])
            .or_default()
            .push((start, end));
    }
    intervals
        .into_iter()
        .map(|(gpu, mut list)| {
            list.sort_unstable();
            let span = (list[0].0, list.iter().map(|i| i.1).max().expect("end"));
            let (mut busy, mut open) = (0, None::<(i64, i64)>);
            for (s, e) in &list {
                match open {
                    Some((a, b)) if *s <= b => open = Some((a, b.max(*e))),
                    Some((a, b)) => {
                        busy += b - a;
                        open = Some((*s, *e));
                    }
                    None => open = Some((*s, *e)),
                }
            }
            if let Some((a, b)) = open {
                busy += b - a;
            }
            (gpu, (list.len(), busy, span))
        })
        .collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_rocprofv3_document_gives_each_gpu_its_kernels_and_busy_time() {
    let oracle = walk();
    let project = Project::new();
    let path = corpus().join("misc/rocprofv3_908_results.json.gz");
    let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "rocprofv3_json", "{imported}");
    let dispatches: usize = oracle.values().map(|v| v.0).sum();
    assert_eq!(
        imported["rows"]["trace_events"].as_u64(),
        Some(dispatches as u64),
        "{imported}"
    );
    let codes: Vec<&str> = imported["limitations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["code"].as_str())
        .collect();
    assert!(codes.contains(&"no_host_api_records"), "{codes:?}");

    let summary = project.json(&["analyze", "summary", "latest"]);
    let devices = summary["gpu"]["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), oracle.len(), "{summary}");
    for d in devices {
        let gpu = d["device"].as_i64().expect("device");
        let (_, busy, (start, end)) = oracle[&gpu];
        assert_eq!(d["busy_ns"].as_i64(), Some(busy), "GPU {gpu}");
        assert_eq!(d["span"]["dur_ns"].as_i64(), Some(end - start), "GPU {gpu}");
    }
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("GPU 0 busy"), "{headline}");
    // With no launches recorded the gaps say so instead of blaming the host.
    assert!(headline.contains("no recorded launch"), "{headline}");
}
