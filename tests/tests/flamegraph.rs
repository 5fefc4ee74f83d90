//! Flame graphs and comparisons through the real binary: the SVG is
//! well-formed XML naming the top frame, `analyze compare-hotspots` shows per-frame
//! deltas by logical key with the right sign, and the differential graph
//! marks the frame that grew as grown.

use flameox_tests::{Project, corpus};
use serde_json::Value;

/// Every `<title>` text of a well-formed SVG (panics on malformed XML).
fn titles(svg: &str) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut titles = Vec::new();
    let mut in_title = false;
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) => in_title = e.name().as_ref() == b"title",
            quick_xml::events::Event::Text(t) if in_title => {
                titles.push(t.decode().expect("text").into_owned());
            }
            quick_xml::events::Event::End(_) => in_title = false,
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    titles
}

fn run_of(imported: &Value) -> String {
    imported["run_id"].as_str().expect("run").to_owned()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn flame_graph_names_the_top_frame_and_diffs_have_the_right_sign() {
    let project = Project::new();
    let base_path = corpus().join("stacks/pyspy_workload.folded.txt");
    let text = std::fs::read_to_string(&base_path).expect("corpus");
    let base = run_of(&project.json(&["import", base_path.to_str().expect("utf-8")]));

    let svg_path = project.path().join("fg.svg");
    let hot = project.json(&[
        "analyze",
        "hotspots",
        &base,
        "--limit",
        "1",
        "--flamegraph",
        svg_path.to_str().expect("utf-8"),
    ]);
    let top = hot["rows"][0]["function"].as_str().expect("top").to_owned();
    let svg = std::fs::read_to_string(&svg_path).expect("svg written");
    assert!(
        titles(&svg).iter().any(|t| t.starts_with(&top)),
        "the top frame {top} is drawn"
    );
    // Titled with the input's name and the metric in words, not its key.
    assert!(
        svg.contains("pyspy_workload.folded.txt — "),
        "the input's name is the title"
    );
    assert!(
        !svg.contains(">trace.wall_ns<") && svg.contains(&base),
        "{base}"
    );

    // A second run where every stack ending in the top frame doubles.
    let grown: String = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (stack, count) = line.rsplit_once(' ').expect("count");
            let count: i64 = count.parse().expect("int");
            let leaf = stack.rsplit(';').next().unwrap_or("");
            let factor = if leaf.starts_with(&top) { 2 } else { 1 };
            format!("{stack} {}\n", count * factor)
        })
        .collect();
    let grown_path = project.path().join("grown.folded.txt");
    std::fs::write(&grown_path, grown).expect("write");
    let target = run_of(&project.json(&["import", grown_path.to_str().expect("utf-8")]));

    let diff_svg = project.path().join("diff.svg");
    let deltas = project.json(&[
        "analyze",
        "compare-hotspots",
        &target,
        &base,
        "--limit",
        "1000",
        "--flamegraph",
        diff_svg.to_str().expect("utf-8"),
    ]);
    let rows = deltas["rows"].as_array().expect("rows");
    let first = &rows[0];
    assert_eq!(first["function"], top.as_str(), "{deltas}");
    let base_self = hot["rows"][0]["self_value"].as_i64().expect("self");
    assert_eq!(first["delta_self"].as_i64(), Some(base_self), "doubled");
    assert_eq!(first["target_self"].as_i64(), Some(2 * base_self));
    assert!(
        rows.iter()
            .filter(|r| r["function"] != top.as_str())
            .all(|r| r["delta_self"] == 0),
        "nothing else changed by self value"
    );
    let diff = std::fs::read_to_string(&diff_svg).expect("differential svg");
    let grown_title = titles(&diff)
        .into_iter()
        .find(|t| t.starts_with(&top))
        .expect("the grown frame is drawn");
    assert!(grown_title.contains("; +"), "{grown_title}");

    // Comparing across metrics that do not exist on both sides is refused.
    let perfetto = corpus().join("perfetto/perfetto_pybuilder_trackevent.pftrace");
    let other = run_of(&project.json(&["import", perfetto.to_str().expect("utf-8")]));
    let err = project.json_err(
        &[
            "analyze",
            "compare-hotspots",
            &other,
            &base,
            "--metric",
            "trace.wall_ns",
        ],
        "COMPARISON_INVALID",
        6,
    );
    assert_eq!(err["details"]["metric"], "trace.wall_ns");
}
