//! XPlane: a JAX profile's `*.xplane.pb` imports by content
//! into host threads and GPU streams, and the answers an agent reads first
//! hold the same events this test counts with its own protobuf walk over
//! the file (planes → lines → events), which knows nothing of flameox.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};
use serde_json::Value;

/// One protobuf field: number, and its varint or bytes.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = buf[*at];
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
    }
    value
}

fn fields(buf: &[u8]) -> Vec<(u64, Field<'_>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let key = varint(buf, &mut at);
        let field = match key & 7 {
            0 => Field::Varint(varint(buf, &mut at)),
            2 => {
                let len = varint(buf, &mut at) as usize;
                at += len;
                Field::Bytes(&buf[at - len..at])
            }
            1 => {
                at += 8;
                continue;
            }
            5 => {
                at += 4;
                continue;
            }
            other => panic!("wire type {other}"),
        };
        out.push((key >> 3, field));
    }
    out
}

/// Events per (plane name, line name, line id's low 32 bits).
fn walk(bytes: &[u8]) -> BTreeMap<(String, String, i64), usize> {
    let mut out = BTreeMap::new();
    for (n, plane) in fields(bytes) {
        let (1, Field::Bytes(plane)) = (n, plane) else {
            continue;
        };
        let plane_fields = fields(plane);
        let plane_name = plane_fields
            .iter()
            .find_map(|(n, f)| match (n, f) {
                (2, Field::Bytes(b)) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .unwrap_or_default();
        for (n, line) in &plane_fields {
            let (3, Field::Bytes(line)) = (n, line) else {
                continue;
            };
            let mut id = 0;
            let mut name = String::new();
            let mut events = 0;
            for (n, f) in fields(line) {
                match (n, f) {
                    (1, Field::Varint(v)) => id = v as i64,
                    (2, Field::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
                    (4, Field::Bytes(_)) => events += 1,
                    _ => {}
                }
            }
            out.insert((plane_name.clone(), name, id & 0xFFFF_FFFF), events);
        }
    }
    out
}

fn import(project: &Project, name: &str) -> (Value, BTreeMap<(String, String, i64), usize>) {
    let path = corpus().join("misc").join(name);
    let oracle = walk(&std::fs::read(&path).expect("corpus"));
    let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "xplane", "{imported}");
    (imported, oracle)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_jax_cpu_profile_imports_with_every_host_thread_and_event() {
    let project = Project::new();
    let (imported, oracle) = import(&project, "jax0.10_cpu_mlp.xplane.pb");
    let host: BTreeMap<i64, usize> = oracle
        .iter()
        .filter(|((plane, _, _), _)| plane == "/host:CPU")
        .map(|((_, _, tid), n)| (*tid, *n))
        .collect();
    let total: usize = host.values().sum();
    assert!(total > 10_000, "{total}");
    assert_eq!(
        imported["rows"]["trace_events"].as_u64(),
        Some(total as u64),
        "{imported}"
    );
    let threads = project.json(&["threads", "latest", "--limit", "100"]);
    let listed: BTreeMap<i64, usize> = threads["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| Some((r["tid"].as_i64()?, r["events"].as_u64()? as usize)))
        .collect();
    assert_eq!(listed, host, "events per host thread");
    // The busiest thread leads the summary with a frame of its own.
    let summary = project.json(&["analyze", "summary", "latest"]);
    let (busiest, _) = host.iter().max_by_key(|(_, n)| **n).expect("a thread");
    assert_eq!(summary["threads"][0]["tid"], *busiest, "{summary}");
    assert!(
        summary["headline"]
            .as_str()
            .unwrap_or("")
            .contains("top frame"),
        "{summary}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_jax_gpu_profile_gives_kernels_on_their_stream_linked_to_their_launches() {
    let project = Project::new();
    let (_, oracle) = import(&project, "jax_te_fused_attn_934987a2fc2f.xplane.pb");
    let stream_events: usize = oracle
        .iter()
        .filter(|((plane, line, _), _)| {
            plane.starts_with("/device:GPU:") && line.starts_with("Stream #")
        })
        .map(|(_, n)| *n)
        .sum();
    assert!(stream_events > 0);
    let threads = project.json(&["threads", "latest"]);
    let stream = threads["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["kind"] == "gpu_stream")
        .expect("a GPU stream");
    assert_eq!(
        stream["events"].as_u64(),
        Some(stream_events as u64),
        "{stream}"
    );
    // Every kernel's launch is found through its correlation id: the gaps
    // name the launching thread, and the summary leads with the device.
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("GPU 0 busy"), "{headline}");
    assert!(
        !headline.contains("start_trace"),
        "the profiler's own call is no work: {headline}"
    );
    let gaps = project.json(&["analyze", "gpu-gaps", "latest", "--limit", "3"]);
    let first = &gaps["gaps"][0];
    assert!(
        first["launch"]["tid"].is_i64()
            || first["launching_thread"].is_object()
            || first.to_string().contains("tid"),
        "{gaps}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_cut_xspace_keeps_what_came_before_or_says_why_not() {
    let bytes = std::fs::read(corpus().join("misc/jax0.10_cpu_mlp.xplane.pb")).expect("corpus");
    let project = Project::new();
    for cut in [bytes.len() / 2, bytes.len() - 7] {
        std::fs::write(project.path().join("cut.xplane.pb"), &bytes[..cut]).expect("write");
        let out = project.run(&["import", "cut.xplane.pb", "--json"]);
        let body: Value = serde_json::from_slice(&out.stdout).expect("a JSON answer");
        match out.status.code() {
            Some(0) => {
                let codes: Vec<&str> = body["limitations"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l["code"].as_str())
                    .collect();
                assert!(codes.contains(&"damaged_xspace"), "cut {cut}: {body}");
            }
            _ => assert_eq!(body["code"], "ARTIFACT_PARSE_FAILED", "cut {cut}: {body}"),
        }
    }
}
