//! rocprofv3's CSV output (its default) imports as the same device
//! evidence as its JSON: the corpus run's dispatches (`misc/rocprofv3_908_
//! results.json.gz`) written here as the CSV tables rocprofv3 6.4 writes
//! (`agent_info`, `kernel_trace` with `"Agent N"` ids and `Stream_Id`),
//! plus a `hip_api_trace` with one `hipLaunchKernel` per dispatch (same
//! correlation id), give each GPU the busy time and span the test's own
//! walk over the JSON computes ([`super::rocprof_import::walk`]).

use std::fmt::Write as _;
use std::path::Path;

use flameox_tests::{Project, corpus_json};

use super::rocprof_import::walk;

/// A CSV field: numbers bare, text quoted with `"` doubled.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// Writes the run's tables into `dir`; returns (dispatches, launches).
fn write_tables(dir: &Path, launches: bool) -> (usize, usize) {
    let doc = corpus_json("misc/rocprofv3_908_results.json.gz");
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let mut agents =
        String::from("\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Name\",\"Product_Name\"\n");
    let mut node_of = std::collections::BTreeMap::new();
    for a in tool["agents"].as_array().expect("agents") {
        let node = a["node_id"].as_i64().expect("node");
        node_of.insert(a["id"]["handle"].as_u64().expect("id"), node);
        let kind = if a["type"] == 2 { "GPU" } else { "CPU" };
        writeln!(
            agents,
            "{node},{},{},{},{}",
            a["logical_node_id"],
            quoted(kind),
            quoted(a["name"].as_str().unwrap_or("")),
            quoted(a["product_name"].as_str().unwrap_or(""))
        )
        .expect("write");
    }
    let names: std::collections::BTreeMap<u64, &str> = tool["kernel_symbols"]
        .as_array()
        .expect("symbols")
        .iter()
        .map(|k| {
            (
                k["kernel_id"].as_u64().expect("id"),
                k["kernel_name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let mut kernels = String::from(
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n",
    );
    let mut api = String::from(
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    let dispatches = tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .expect("dispatches");
    for d in dispatches {
        let info = &d["dispatch_info"];
        let kernel_id = info["kernel_id"].as_u64().expect("kernel");
        let correlation = &d["correlation_id"]["internal"];
        let start = d["start_timestamp"].as_i64().expect("start");
        let dims = |v: &serde_json::Value| format!("{},{},{}", v["x"], v["y"], v["z"]);
        writeln!(
            kernels,
            "\"KERNEL_DISPATCH\",\"Agent {}\",{},{},{},{},{kernel_id},{},{correlation},{start},{},{},{},0,0,0,{},{}",
            node_of[&info["agent_id"]["handle"].as_u64().expect("agent")],
            info["queue_id"]["handle"],
            d["stream_id"]["handle"],
            d["thread_id"],
            info["dispatch_id"],
            quoted(names.get(&kernel_id).copied().unwrap_or("")),
            d["end_timestamp"],
            info["group_segment_size"],
            info["private_segment_size"],
            dims(&info["workgroup_size"]),
            dims(&info["grid_size"]),
        )
        .expect("write");
        writeln!(
            api,
            "\"HIP_RUNTIME_API\",\"hipLaunchKernel\",908,908,{correlation},{},{}",
            start - 20_000,
            start - 15_000
        )
        .expect("write");
    }
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join("908_agent_info.csv"), agents).expect("write");
    std::fs::write(dir.join("908_kernel_trace.csv"), kernels).expect("write");
    if launches {
        std::fs::write(dir.join("908_hip_api_trace.csv"), api).expect("write");
    }
    (
        dispatches.len(),
        if launches { dispatches.len() } else { 0 },
    )
}

fn codes(imported: &serde_json::Value) -> Vec<String> {
    imported["limitations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["code"].as_str().map(str::to_owned))
        .collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_rocprofv3_csv_folder_gives_each_gpu_what_its_json_gives() {
    let oracle = walk();
    let project = Project::new();
    let (dispatches, launches) = write_tables(&project.path().join("908"), true);
    let imported = project.json(&["import", "908"]);
    assert_eq!(imported["kind"], "rocprofv3_csv_dir", "{imported}");
    assert_eq!(imported["producer"], "rocprofv3", "{imported}");
    assert_eq!(
        imported["rows"]["trace_events"].as_u64(),
        Some((dispatches + launches) as u64)
    );
    assert!(!codes(&imported).contains(&"no_host_api_records".to_owned()));
    let summary = project.json(&["analyze", "summary", "latest"]);
    let devices = summary["gpu"]["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), oracle.len(), "{summary}");
    for d in devices {
        let gpu = d["device"].as_i64().expect("device");
        let (_, busy, (start, end)) = oracle[&gpu];
        assert_eq!(d["busy_ns"].as_i64(), Some(busy), "GPU {gpu}");
        // The device's span opens at its first launch, 20 µs before its
        // first kernel.
        assert_eq!(
            d["span"]["dur_ns"].as_i64(),
            Some(end - start + 20_000),
            "GPU {gpu}"
        );
    }
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("GPU 0 busy"), "{headline}");
    // The launches are recorded and linked: the gaps are not "no recorded
    // launch" any more.
    assert!(!headline.contains("no recorded launch"), "{headline}");
    eprintln!("rocprofv3 CSV folder: {headline}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn one_csv_table_imports_alone_and_a_cut_one_keeps_its_whole_rows() {
    let oracle = walk();
    let project = Project::new();
    let (dispatches, _) = write_tables(&project.path().join("908"), false);
    let table = project.path().join("908/908_kernel_trace.csv");
    let imported = project.json(&["import", table.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "rocprofv3_csv", "{imported}");
    assert_eq!(
        imported["rows"]["trace_events"].as_u64(),
        Some(dispatches as u64)
    );
    assert!(codes(&imported).contains(&"no_host_api_records".to_owned()));
    // Without agent_info the devices keep the agents' node numbers.
    let summary = project.json(&["analyze", "summary", "latest"]);
    let mut devices: Vec<i64> = summary["gpu"]["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["device"].as_i64().expect("device"))
        .collect();
    devices.sort_unstable();
    let nodes: Vec<i64> = oracle.keys().map(|gpu| gpu + 2).collect();
    assert_eq!(devices, nodes, "{summary}");

    // Cut inside a row: every whole row is kept; the cut one is skipped
    // or kept whole, never invented.
    let text = std::fs::read_to_string(&table).expect("read");
    let cut = text.len() / 2 + 7;
    std::fs::write(project.path().join("cut_kernel_trace.csv"), &text[..cut]).expect("write");
    let whole_rows = text[..cut].matches('\n').count() - 1;
    let imported = project.json(&["import", "cut_kernel_trace.csv"]);
    let rows = imported["rows"]["trace_events"].as_u64().expect("rows") as usize;
    assert!(
        rows == whole_rows || rows == whole_rows + 1,
        "{rows} of {whole_rows}"
    );
    // A header that is no rocprofv3 table is refused, nothing published.
    let head = project.head();
    std::fs::write(
        project.path().join("other.csv"),
        "\"Name\",\"Calls\"\n\"x\",1\n",
    )
    .expect("write");
    let err = project.run(&["import", "other.csv", "--kind", "rocprofv3_csv", "--json"]);
    assert!(!err.status.success());
    assert_eq!(project.head(), head);
}
