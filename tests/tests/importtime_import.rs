//! `python -X importtime` output made by the real interpreter at test time
//! (the `python3` every CI machine has): a package whose submodule spends
//! a known time importing. Content detection names the format; hotspots
//! name the slow module by its own import time (`import.self_ns`), callers
//! say who imported it, and two runs — the module made slower — compare
//! with the slow module's delta on top. A listing cut off mid-line still
//! imports, saying what it skipped; text that is not a listing is a typed
//! error with nothing published.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use flameox_tests::Project;

/// Runs `python3 -X importtime -c "import app"` over a package whose
/// `app.slow` busy-waits `millis` while it is imported; returns the file
/// holding the listing (stderr).
fn listing(project: &Project, name: &str, millis: u64) -> PathBuf {
    let src = project.path().join(format!("src-{name}"));
    std::fs::create_dir_all(src.join("app")).expect("package dir");
    std::fs::write(
        src.join("app/__init__.py"),
        "import json\nimport app.slow\n",
    )
    .expect("init");
    std::fs::write(
        src.join("app/slow.py"),
        format!(
            "import time\nend = time.perf_counter() + {}\nwhile time.perf_counter() < end:\n    pass\n",
            millis as f64 / 1000.0
        ),
    )
    .expect("slow module");
    let out = Command::new("python3")
        .args(["-X", "importtime", "-c", "import app"])
        .current_dir(&src)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (CI machines have it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = project.path().join(format!("{name}.importtime.txt"));
    std::fs::write(&path, &out.stderr).expect("write listing");
    path
}

/// Each module's own import time (µs) in a listing, summed by name.
fn self_us(listing: &Path) -> BTreeMap<String, i64> {
    let text = std::fs::read_to_string(listing).expect("listing");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("import time:") else {
            continue;
        };
        let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
        if let [own, _, name] = cells[..]
            && let Ok(us) = own.parse::<i64>()
        {
            *out.entry(name.to_owned()).or_insert(0) += us;
        }
    }
    out
}

fn import(project: &Project, path: &Path) -> serde_json::Value {
    project.json(&["import", path.to_str().expect("utf8")])
}

#[test]
fn import_times_answer_as_a_profile_and_compare_between_runs() {
    let project = Project::new();
    let fast = listing(&project, "fast", 150);
    let slow = listing(&project, "slow", 450);
    let base = import(&project, &fast);
    assert_eq!(base["kind"], "python_importtime", "{base}");
    let base_run = base["run_id"].as_str().expect("run").to_owned();
    let target_run = import(&project, &slow)["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    // Wall-clock import times: on a loaded machine any start-up module
    // can outweigh the slow one, so the oracle is the listing itself.
    let (fast_self, slow_self) = (self_us(&fast), self_us(&slow));
    let heaviest = |m: &BTreeMap<String, i64>| {
        m.iter()
            .max_by_key(|(name, us)| (**us, std::cmp::Reverse((*name).clone())))
            .map(|(name, _)| name.clone())
            .expect("a module")
    };

    let hot = project.json(&["analyze", "hotspots", &base_run, "--limit", "50"]);
    assert_eq!(hot["metric"], "import.self_ns");
    let rows = hot["rows"].as_array().expect("rows");
    assert_eq!(
        rows[0]["function"],
        heaviest(&fast_self).as_str(),
        "{hot:#}"
    );
    let own_ns = fast_self["app.slow"] * 1000;
    assert!(
        own_ns >= 150_000_000,
        "app.slow busy-waits 150 ms: {own_ns} ns"
    );
    let slow_row = rows
        .iter()
        .find(|r| r["function"] == "app.slow")
        .unwrap_or_else(|| panic!("app.slow among the hotspots: {hot:#}"));
    assert_eq!(slow_row["self_value"].as_i64(), Some(own_ns), "{slow_row}");
    let callers = project.json(&["stacks", "callers", &base_run, "app.slow"]);
    assert_eq!(callers["rows"][0]["function"], "app", "{callers:#}");

    let delta = project.json(&[
        "analyze",
        "compare-hotspots",
        &target_run,
        &base_run,
        "--limit",
        "50",
    ]);
    let row = delta["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["function"] == "app.slow"))
        .unwrap_or_else(|| panic!("app.slow among the changes: {delta:#}"));
    let grew = (slow_self["app.slow"] - fast_self["app.slow"]) * 1000;
    assert!(grew >= 200_000_000, "the slower module grew by {grew} ns");
    assert_eq!(row["delta_self"].as_i64(), Some(grew), "{row}");

    // Cut off mid-line: imported, with what was skipped said.
    let text = std::fs::read_to_string(&fast).expect("listing");
    let cut = project.path().join("cut.txt");
    std::fs::write(&cut, &text[..text.len() - 7]).expect("cut");
    let partial = import(&project, &cut);
    assert!(
        partial["limitations"]
            .to_string()
            .contains("malformed_line")
            || partial["limitations"]
                .to_string()
                .contains("unfinished_importer"),
        "{partial}"
    );
    // Not a listing at all.
    let head = project.head();
    let junk = project.path().join("junk.txt");
    std::fs::write(&junk, "import time: a | b | c\n").expect("junk");
    project.json_err(
        &[
            "import",
            junk.to_str().expect("utf8"),
            "--kind",
            "python_importtime",
        ],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert_eq!(project.head(), head, "nothing published");
}
