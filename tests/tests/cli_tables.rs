//! The terminal's tables as a person reads them, on a generated Kineto
//! trace at 80 and 160 columns: `analyze hotspots`, `threads`, `stacks
//! callers` and `--help`. Each output is compared with its snapshot in
//! `tests/snapshots/cli_tables/` (run ids, commit ids and cursors masked);
//! rerun with `UPDATE_SNAPSHOTS=1` to accept a reviewed change. Beyond the
//! snapshot: every table line fits the width, and the `frame` column and a
//! bare function name both work as the next command's frame.

use std::path::PathBuf;

use flameox_tests::{Project, repo_root, write_kineto_job};

const WIDTHS: [usize; 2] = [80, 160];

/// Runs a human (not `--json`) command at `width` columns.
fn table(project: &Project, width: usize, args: &[&str]) -> String {
    let out = project
        .command(args)
        .env("COLUMNS", width.to_string())
        .output()
        .expect("running flameox");
    assert!(
        out.status.success(),
        "flameox {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Replaces what differs between imports: the run id (whole and its
/// 8-character prefix), commit ids and page cursors.
fn masked(text: &str, run_id: &str) -> String {
    let mut out = text.replace(run_id, "<run>");
    out = out.replace(&run_id[..8], "<run>");
    out.lines()
        .map(|line| {
            let mut line = line.to_owned();
            if let Some(at) = line.find("(commit ") {
                let end = line[at..].find(')').map_or(line.len(), |e| at + e);
                line.replace_range(at..end, "(commit <commit>");
            }
            if let Some(at) = line.find("--cursor ") {
                line.replace_range(at.., "--cursor <cursor>");
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn check_snapshot(name: &str, rendered: &str) {
    let path: PathBuf = repo_root().join(format!("tests/snapshots/cli_tables/{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::write(&path, rendered).expect("write snapshot");
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    if stored != rendered {
        let line = stored
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(stored.lines().count().min(rendered.lines().count()));
        panic!(
            "{name} changed at line {}; review and rerun with UPDATE_SNAPSHOTS=1 to accept:\n--- snapshot\n{stored}\n--- now\n{rendered}",
            line + 1
        );
    }
}

/// The lines of the table under a header line starting with `header`.
fn table_lines<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with(header))
        .take_while(|l| !l.is_empty() && !l.starts_with("showing") && !l.starts_with("next"))
        .collect()
}

#[test]
fn tables_fit_the_terminal_and_their_frames_work_in_the_next_command() {
    let project = Project::new();
    write_kineto_job(project.path(), 1, 3_000, 7);
    let import = project.json(&["import", "rank0.pt.trace.json"]);
    let run_id = import["run_id"].as_str().expect("run_id").to_owned();

    for width in WIDTHS {
        let hotspots = table(
            &project,
            width,
            &["analyze", "hotspots", "latest", "--limit", "8"],
        );
        let threads = table(&project, width, &["threads", "latest"]);
        for (what, text, header) in [
            ("hotspots", &hotspots, "self"),
            ("threads", &threads, "busy"),
        ] {
            let lines = table_lines(text, header);
            assert!(lines.len() >= 2, "{what} has no table:\n{text}");
            for line in lines {
                assert!(
                    line.chars().count() <= width,
                    "{what} line wider than {width}: {line}"
                );
            }
        }
        // Kineto slices carry no file: no empty location column; their
        // categories differ, so they get one.
        let header = table_lines(&hotspots, "self")[0];
        assert!(
            !header.contains("location") && header.contains("category"),
            "{header}"
        );
        // An instrumented trace has no samples: no all-zero columns.
        assert!(!threads.contains("samples"), "{threads}");

        // A host operator's key prefix, from the table, drives the next call.
        let rows = table_lines(&hotspots, "self");
        let operator = rows
            .iter()
            .find(|l| l.ends_with("cpu_op"))
            .unwrap_or_else(|| panic!("no cpu_op row in\n{hotspots}"));
        let key = operator
            .split_whitespace()
            .find(|w| w.len() == 8 && w.bytes().all(|b| b.is_ascii_hexdigit()))
            .unwrap_or_else(|| panic!("no frame key in {operator}"));
        let callers = table(
            &project,
            width,
            &["stacks", "callers", "latest", key, "--limit", "5"],
        );
        assert!(callers.contains("callers of"), "{callers}");

        let help = table(&project, width, &["analyze", "hotspots", "--help"]);
        assert!(
            help.lines().all(|l| l.chars().count() <= width),
            "help wider than {width}:\n{help}"
        );
        let global = help
            .find("Global options:")
            .expect("global options grouped");
        assert!(
            help[..global].contains("--limit") && !help[..global].contains("--workspace"),
            "{help}"
        );

        check_snapshot(&format!("hotspots_{width}"), &masked(&hotspots, &run_id));
        check_snapshot(&format!("threads_{width}"), &masked(&threads, &run_id));
        check_snapshot(&format!("callers_{width}"), &masked(&callers, &run_id));
        check_snapshot(&format!("help_hotspots_{width}"), &help);
    }

    // The same frame by its key prefix and by its bare name.
    let by_name = project.json(&["stacks", "callers", "latest", "aten::addmm"]);
    let key = by_name["frame"]["keys"][0]
        .as_str()
        .expect("frame key")
        .to_owned();
    let by_prefix = project.json(&["stacks", "callers", "latest", &key[..8]]);
    assert_eq!(by_name["rows"], by_prefix["rows"]);
    assert_eq!(by_name["frame"]["function"], by_prefix["frame"]["function"]);
}
