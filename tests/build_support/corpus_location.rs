// Where the shared corpus of real traces is, decided once at build time for
// every crate whose tests read it (included by their build.rs):
// `$FLAMEOX_CORPUS`, else `../shared/corpus` beside the repository. Tests
// read the folder as `env!("FLAMEOX_CORPUS_DIR")`. When the folder is absent
// the crate is built with `cfg(corpus_absent)`, under which corpus-backed
// tests are ignored with a reason that says how to get the corpus (nextest
// reports them as skipped); `FLAMEOX_REQUIRE_CORPUS=1` (CI) fails the build
// instead. The list of files is tests/corpus.toml.

/// Emits `FLAMEOX_CORPUS_DIR` and, without a corpus, `cfg(corpus_absent)`
/// (with a build warning saying so when `warn`).
fn emit_corpus_location(warn: bool) {
    println!("cargo::rustc-check-cfg=cfg(corpus_absent)");
    println!("cargo::rerun-if-env-changed=FLAMEOX_CORPUS");
    println!("cargo::rerun-if-env-changed=FLAMEOX_REQUIRE_CORPUS");
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dir = match std::env::var("FLAMEOX_CORPUS") {
        Ok(dir) if !dir.is_empty() => std::path::PathBuf::from(dir),
        _ => manifest.join("../../shared/corpus"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("cargo::rustc-env=FLAMEOX_CORPUS_DIR={}", dir.display());
    // benches/corpus.sh touches the manifest when it fills a folder, so a
    // corpus that appears later is noticed (watching a missing path would
    // rebuild the crate on every build).
    println!(
        "cargo::rerun-if-changed={}",
        manifest.join("../tests/corpus.toml").display()
    );
    if dir.join("kineto").is_dir() {
        println!("cargo::rerun-if-changed={}", dir.display());
    } else {
        if std::env::var("FLAMEOX_REQUIRE_CORPUS").as_deref() == Ok("1") {
            panic!(
                "FLAMEOX_REQUIRE_CORPUS=1 but there is no corpus at {} (set FLAMEOX_CORPUS; `bash benches/corpus.sh status` lists the files)",
                dir.display()
            );
        }
        println!("cargo::rustc-cfg=corpus_absent");
        if warn {
            println!(
                "cargo::warning=no shared corpus at {}: corpus-backed tests are skipped (bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS)",
                dir.display()
            );
        }
    }
}
