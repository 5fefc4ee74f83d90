//! The seed's command spellings and record reads work from the terminal
//! (issue 47): `investigations show`, `hypotheses show` and `findings show`
//! (the seed's "Workload commands" and "Evidence commands"), with `get`
//! still accepted where an earlier build named it so; and `init` is
//! idempotent as the seed's `initialize_workspace` ("additive and
//! idempotent") says: a second call changes nothing.

use flameox_tests::Project;
use serde_json::Value;

fn id(v: &Value, key: &str) -> String {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {v}"))
        .to_owned()
}

#[test]
fn investigations_hypotheses_and_findings_are_shown_by_the_seeds_words() {
    let project = Project::new();
    let folded = project.path().join("p.folded");
    std::fs::write(&folded, "main;sort 9\nmain;io 1\n").expect("profile");
    let run = project.json(&["import", folded.to_str().expect("utf-8")]);
    let run_id = id(&run, "run_id");
    let inv = project.json(&["investigations", "create", "--question", "why is it slow?"]);
    let inv_id = id(&inv, "investigation_id");
    let hyp = project.json(&[
        "hypotheses",
        "record",
        "--investigation-id",
        &inv_id,
        "--statement",
        "sorting dominates",
        "--prediction",
        "sort is the top frame",
        "--refuted-if",
        "sort is under 10 %",
    ]);
    let hyp_id = id(&hyp, "hypothesis_id");
    let finding = project.json(&[
        "findings",
        "record",
        "--investigation-id",
        &inv_id,
        "--claim",
        "nothing measured yet",
        "--level",
        "observation",
        "--references",
        &format!("run:{run_id}"),
    ]);
    let finding_id = id(&finding, "finding_id");

    // Seed: "flameox investigations show <investigation-id>".
    let shown = project.json(&["investigations", "show", &inv_id]);
    assert_eq!(
        shown["investigation"]["question"], "why is it slow?",
        "{shown}"
    );
    assert_eq!(project.json(&["investigations", "get", &inv_id]), shown);
    // Seed: "flameox hypotheses show <hypothesis-id>".
    let h = project.json(&["hypotheses", "show", &hyp_id]);
    assert_eq!(h["statement"], "sorting dominates", "{h}");
    assert_eq!(h["status"], "proposed", "{h}");
    assert_eq!(h["investigation_id"], inv_id.as_str());
    // Seed: "flameox findings show <finding-id>".
    let f = project.json(&["findings", "show", &finding_id]);
    assert_eq!(f["claim"], "nothing measured yet", "{f}");
    assert_eq!(project.json(&["findings", "get", &finding_id]), f);
    // An unknown id is a typed error, not an empty record.
    let missing = project.run(&["hypotheses", "show", "hyp_missing", "--json"]);
    assert_ne!(missing.status.code(), Some(0), "{missing:?}");
}

#[test]
fn init_twice_changes_nothing_the_second_time() {
    let project = Project::new();
    let identity = project.path().join(".flameox/workspace.json");
    let before = std::fs::read(&identity).expect("workspace identity");
    let again = project.json(&["init"]);
    assert_eq!(
        std::fs::read(&identity).expect("identity"),
        before,
        "{again}"
    );
}
