//! Every test that reads the shared corpus is gated on it: a fresh clone
//! has no corpus, and a test that reads it ungated fails there instead of
//! saying it was skipped and how to get the corpus (the one skip the
//! guide allows). This scans the test sources, since the failure only
//! shows on a machine without the corpus.

use std::path::{Path, PathBuf};

/// The Rust files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `#[test]` functions of `source` that read the corpus without a
/// `corpus_absent` gate among their attributes.
fn ungated_corpus_tests(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.trim() != "#[test]" {
            continue;
        }
        // The attribute block: the lines above up to the previous item,
        // and the lines below up to the `fn`.
        let mut start = at;
        while start > 0 {
            let above = lines[start - 1].trim();
            if above.is_empty() || above == "}" || above.ends_with(';') && !above.starts_with('#') {
                break;
            }
            start -= 1;
        }
        let Some(fn_at) = (at..lines.len()).find(|&i| lines[i].trim_start().starts_with("fn "))
        else {
            continue;
        };
        let attributes = lines[start..fn_at].join("\n");
        // The body: up to the next test or the end of the file.
        let end = (fn_at + 1..lines.len())
            .find(|&i| lines[i].trim() == "#[test]")
            .unwrap_or(lines.len());
        let body = lines[fn_at..end].join("\n");
        let reads_corpus = body.contains("corpus()") || body.contains("corpus_json(");
        if reads_corpus && !attributes.contains("corpus_absent") {
            found.push(lines[fn_at].trim().to_string());
        }
    }
    found
}

#[test]
fn every_test_reading_the_corpus_is_skipped_without_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "tests/tests",
        "tests/src",
        "extractors",
        "engine",
        "recipes",
        "cli",
        "mcp",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "scanned {} files", files.len());
    let mut ungated = Vec::new();
    for file in &files {
        let Ok(source) = std::fs::read_to_string(file) else {
            continue;
        };
        for name in ungated_corpus_tests(&source) {
            ungated.push(format!("{}: {name}", file.display()));
        }
    }
    assert!(
        ungated.is_empty(),
        "tests read the corpus without #[cfg_attr(corpus_absent, ignore = \"...\")]:\n{}",
        ungated.join("\n")
    );
}

#[test]
fn the_scan_finds_an_ungated_test_and_accepts_a_gated_one() {
    // Spelled in pieces so that this file's own source does not read as a
    // test reading the corpus.
    let read = format!("    let p = {}().join(\"x\");", "corpus");
    let ungated = format!("#[test]\nfn reads() {{\n{read}\n}}\n");
    assert_eq!(ungated_corpus_tests(&ungated), vec!["fn reads() {"]);
    let gated = format!(
        "#[test]\n#[cfg_attr(\n    corpus_absent,\n    ignore = \"why\"\n)]\nfn reads() {{\n{read}\n}}\n"
    );
    assert!(ungated_corpus_tests(&gated).is_empty());
    let gated_above = format!(
        "#[cfg_attr(any(corpus_absent, profilers_absent), ignore = \"why\")]\n#[test]\nfn reads() {{\n{read}\n}}\n"
    );
    assert!(ungated_corpus_tests(&gated_above).is_empty());
}
