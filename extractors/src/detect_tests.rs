//! Unit tests of content detection (kept beside `detect.rs`).

use super::*;

#[test]
fn names_round_trip_and_aliases() {
    for k in FormatKind::ALL {
        let expected = (k != FormatKind::Unknown).then_some(k);
        assert_eq!(FormatKind::from_name(k.name()), expected);
    }
    for alias in ["execution_trace", "chrome", "kineto"] {
        assert_eq!(FormatKind::from_name(alias), Some(FormatKind::ChromeJson));
    }
    assert_eq!(FormatKind::from_name("nope"), None);
}

#[test]
fn small_inputs() {
    let k = |s: &str| detect(s.as_bytes(), None).kind;
    assert_eq!(k("[]"), FormatKind::ChromeJson);
    assert_eq!(k(" [ {\"ph\":\"X\"} ]"), FormatKind::ChromeJson);
    assert_eq!(k("{\"traceEvents\":[]}"), FormatKind::ChromeJson);
    assert_eq!(
        k("{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0"),
        FormatKind::ChromeJson
    );
    assert_eq!(k("{\"a\":1}"), FormatKind::Unknown);
    assert_eq!(
        k("{\"nodes\":[],\"startTime\":1}"),
        FormatKind::ChromeCpuProfile
    );
    assert_eq!(
        k("{\"shared\":{},\"profiles\":[]}"),
        FormatKind::SpeedscopeJson
    );
    assert_eq!(k("a;b;c 10\na;b 3\n"), FormatKind::FoldedStacks);
    assert_eq!(k(""), FormatKind::Unknown);
    assert_eq!(k("hello world"), FormatKind::Unknown);
    assert_eq!(
        detect(b"{\"schemaVersion\":1,\"traceEvents\":[", None)
            .producer_hint
            .as_deref(),
        Some("torch.profiler")
    );
}

#[test]
fn stack_json_formats_by_their_keys() {
    let k = |s: &str| detect(s.as_bytes(), None).kind;
    let sampled = r#"{"profiles":[{"type":"sampled","unit":"none","samples":[[0]],"weights":[1]}],"shared":{"frames":[{"name":"a"}]}}"#;
    assert_eq!(k(sampled), FormatKind::SpeedscopeJson);
    // Heads cut inside `profiles` (py-spy's order) or inside `shared`.
    assert_eq!(
        k(r#"{"profiles":[{"type":"evented","events":[{"type":"O","#),
        FormatKind::SpeedscopeJson
    );
    assert_eq!(
        k(r#"{"shared":{"frames":[{"name":"a"},{"name":"b"#),
        FormatKind::SpeedscopeJson
    );
    assert_eq!(
        k(r#"{"$schema":"https://www.speedscope.app/file-format-schema.json","profiles":["#),
        FormatKind::SpeedscopeJson
    );
    assert_eq!(k(r#"{"profiles":[]}"#), FormatKind::Unknown);
    assert_eq!(k(r#"{"shared":{}}"#), FormatKind::Unknown);
    assert_eq!(
        k(r#"{"nodes":[{"id":1,"callFrame":{}}],"samples":[1],"timeDeltas":[0]}"#),
        FormatKind::ChromeCpuProfile
    );
    assert_eq!(
        k(r#"{"nodes":[{"id":1,"callFrame":{"#),
        FormatKind::ChromeCpuProfile
    );
    assert_eq!(k(r#"{"nodes":[]}"#), FormatKind::Unknown);
}

#[test]
fn gecko_profiles_by_their_keys() {
    let k = |s: &str| detect(s.as_bytes(), None).kind;
    let g = FormatKind::GeckoProfile;
    assert_eq!(k(r#"{"meta":{"interval":1},"threads":[]}"#), g);
    assert_eq!(
        k(r#"{"label":"a","duration":7,"markers":[],"profile":{"libs":[]},"fileType":"x"}"#),
        g
    );
    // Heads cut inside the recording's markers, the profile's libs or meta.
    assert_eq!(k(r#"{"label":"a","duration":7,"markers":[[1,"#), g);
    assert_eq!(k(r#"{"libs":[{"start":1,"breakpadId":"AB","#), g);
    assert_eq!(
        k(r#"{"meta":{"version":9,"interval":1,"stackwalk":0,"categories":["#),
        g
    );
    assert_eq!(k(r#"{"threads":[{"stackTable":{},"frameTable":{"#), g);
    assert_eq!(
        k(r#"{"meta":{"version":1},"files":{},"totals":{}}"#),
        FormatKind::Unknown
    );
    assert_eq!(k(r#"{"profile":{}}"#), FormatKind::Unknown);
    assert_eq!(FormatKind::from_name("firefox"), Some(g));
    assert_eq!(FormatKind::from_name("gecko"), Some(g));
    assert_eq!(g.name(), "gecko_profile");
}

#[test]
fn deep_nesting_in_head_is_fine() {
    let mut s = String::from("{\"traceEvents\":[{\"args\":");
    s.push_str(&"[".repeat(100_000));
    assert_eq!(detect(s.as_bytes(), None).kind, FormatKind::ChromeJson);
}

#[test]
fn benchmark_results_by_their_keys() {
    let k = |s: &str| detect(s.as_bytes(), None).kind;
    assert_eq!(
        k(
            r#"{"benchmarks":[{"metadata":{"name":"a"},"runs":[{"values":[1.0]}]}],"metadata":{},"version":"1.0"}"#
        ),
        FormatKind::PyperfJson
    );
    // A head cut inside pyperf's first benchmark.
    assert_eq!(
        k(r#"{"benchmarks":[{"metadata":{"name":"a"},"runs":[{"metadata":{"#),
        FormatKind::PyperfJson
    );
    assert_eq!(
        k(r#"{"results":[{"command":"sleep 1","mean":1.0,"times":[1.0]}]}"#),
        FormatKind::HyperfineJson
    );
    assert_eq!(
        k(r#"{"context":{"date":"x","library_build_type":"release"},"benchmarks":[{"name":"#),
        FormatKind::GoogleBenchmarkJson
    );
    assert_eq!(
        k(r#"{"sampling_mode":"Linear","iters":[1.0],"times":[5.0]}"#),
        FormatKind::CriterionDir
    );
    assert_eq!(
        k(r#"{"group_id":"g","function_id":"f","value_str":null,"full_id":"g/f"}"#),
        FormatKind::CriterionDir
    );
    // Keys alone are not enough.
    assert_eq!(k(r#"{"results":[]}"#), FormatKind::Unknown);
    assert_eq!(k(r#"{"benchmarks":[]}"#), FormatKind::Unknown);
    for (alias, kind) in [
        ("pyperf", FormatKind::PyperfJson),
        ("hyperfine", FormatKind::HyperfineJson),
        ("gbench", FormatKind::GoogleBenchmarkJson),
        ("criterion", FormatKind::CriterionDir),
    ] {
        assert_eq!(FormatKind::from_name(alias), Some(kind));
    }
}
