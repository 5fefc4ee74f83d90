//! The import profile's CPU split (`FLAMEOX_PHASE_CPU`,
//! `benches/import_profile.sh`): an import names the CPU time of each
//! phase, spill runs only count when events spill, and nothing is written
//! without the variable. The generators the profile imports (viztracer's
//! and Chromium's shapes) land the events a walk of their JSON counts.

use flameox_benches::chromium::{ChromiumSpec, write_chromium};
use flameox_benches::kineto::{KinetoArgs, KinetoSpec, write_kineto_args};
use flameox_benches::viztracer::{VizTracerSpec, write_viztracer};
use flameox_tests::Project;
use serde_json::Value;

const PHASES: [&str; 5] = ["decode", "nest", "spill", "write", "hash"];

/// Imports `trace` with the phase profile on; returns the import's JSON
/// and the profile.
fn profiled_import(project: &Project, trace: &std::path::Path) -> (Value, Value) {
    let profile = project.path().join("phase_cpu.json");
    let out = project
        .command(&["--json", "import", trace.to_str().expect("utf-8 path")])
        .env("FLAMEOX_PHASE_CPU", &profile)
        .output()
        .expect("import runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let imported: Value = serde_json::from_slice(&out.stdout).expect("import json");
    let text = std::fs::read_to_string(&profile).expect("the profile was written");
    (imported, serde_json::from_str(&text).expect("profile json"))
}

fn ns(profile: &Value, phase: &str) -> u64 {
    profile[phase]
        .as_u64()
        .unwrap_or_else(|| panic!("{phase} missing: {profile}"))
}

#[test]
fn an_import_names_the_cpu_of_each_phase_and_spill_only_when_it_spills() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("rich.pt.trace.json");
    let spec = KinetoSpec {
        seed: 5,
        events: 40_000,
        streams: 4,
        ops_per_step: 0,
    };
    let file = std::io::BufWriter::new(std::fs::File::create(&trace).expect("create"));
    write_kineto_args(&spec, KinetoArgs::Rich, file).expect("generate");

    let held = Project::new();
    let (imported, profile) = profiled_import(&held, &trace);
    assert!(
        imported["rows"]["trace_events"].as_u64() > Some(20_000),
        "{imported}"
    );
    let keys: Vec<&String> = profile.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), PHASES.len(), "{profile}");
    for phase in ["decode", "nest", "write", "hash"] {
        assert!(ns(&profile, phase) > 0, "{phase} got no CPU: {profile}");
    }
    assert_eq!(ns(&profile, "spill"), 0, "held events spilled: {profile}");
    // Reading the JSON is the largest share of a held import's CPU.
    let decode = ns(&profile, "decode");
    for phase in ["nest", "hash"] {
        assert!(decode > ns(&profile, phase), "{profile}");
    }

    let spilling = Project::new();
    spilling.set_events_in_memory(4000);
    let (spilled, profile) = profiled_import(&spilling, &trace);
    assert_eq!(spilled["rows"], imported["rows"]);
    assert!(ns(&profile, "spill") > 0, "no spill CPU counted: {profile}");

    // Without the variable nothing is counted or written.
    let quiet = Project::new();
    quiet.json(&["import", trace.to_str().expect("utf-8 path")]);
    assert!(!quiet.path().join("phase_cpu.json").exists());
}

/// Every `X` event of a viztracer-shaped trace is one `trace_events` row;
/// a Chromium-shaped trace lands its `X` slices, `B`/`E` pairs, async
/// `b`/`e` pairs and instants (a walk of the JSON counts them).
#[test]
fn the_profile_shapes_land_the_events_their_json_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let viz = dir.path().join("viztracer.json");
    let spec = VizTracerSpec {
        seed: 9,
        events: 20_000,
        threads: 3,
    };
    let calls = write_viztracer(&spec, std::fs::File::create(&viz).expect("create")).expect("gen");
    let chromium = dir.path().join("chromium.json");
    let spec = ChromiumSpec {
        seed: 9,
        events: 20_000,
        renderers: 2,
    };
    write_chromium(&spec, std::fs::File::create(&chromium).expect("create")).expect("gen");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(&chromium).expect("read")).expect("json");
    let count = |ph: &str| {
        doc["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["ph"] == ph)
            .count() as u64
    };
    let walked = count("X") + count("B") + count("b") + count("I");
    assert_eq!(count("B"), count("E"));
    assert_eq!(count("b"), count("e"));

    let project = Project::new();
    let imported = project.json(&["import", viz.to_str().expect("utf-8 path")]);
    assert_eq!(imported["rows"]["trace_events"].as_u64(), Some(calls));
    let imported = project.json(&["import", chromium.to_str().expect("utf-8 path")]);
    assert_eq!(
        imported["rows"]["trace_events"].as_u64(),
        Some(walked),
        "{imported}"
    );
    assert_eq!(
        imported["rows"]["counters"].as_u64().map(|c| c > 0),
        Some(true)
    );
}
