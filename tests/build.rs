//! Build script: where the shared corpus is (tests/build_support/corpus_location.rs),
//! and whether the profilers' virtualenv is there.
include!("build_support/corpus_location.rs");

/// Where `.ci/run` installs the profilers (tests/src/lib.rs names it too).
const DEFAULT_PROFILERS_VENV: &str = "/var/tmp/flameox-profilers-venv";

/// Without `FLAMEOX_PROFILERS_VENV` or `CI`, and with no virtualenv at the
/// default place, the tests that run py-spy, viztracer, pytest, coverage or
/// moto are built with `cfg(profilers_absent)` and ignored with the reason
/// (nextest reports them skipped, not passed). With either variable set
/// they run, and a missing tool fails them. A virtualenv made after the
/// build is noticed when one of the variables changes.
fn emit_profilers_presence() {
    println!("cargo::rustc-check-cfg=cfg(profilers_absent)");
    println!("cargo::rerun-if-env-changed=FLAMEOX_PROFILERS_VENV");
    println!("cargo::rerun-if-env-changed=CI");
    let asked =
        std::env::var_os("FLAMEOX_PROFILERS_VENV").is_some() || std::env::var_os("CI").is_some();
    let present = std::path::Path::new(DEFAULT_PROFILERS_VENV)
        .join("bin/python3")
        .exists();
    if !asked && !present {
        println!("cargo::rustc-cfg=profilers_absent");
        println!(
            "cargo::warning=no profilers virtualenv at {DEFAULT_PROFILERS_VENV}: the tests that run py-spy, viztracer, pytest, coverage or moto are skipped (.ci/run installs them; or set FLAMEOX_PROFILERS_VENV)"
        );
    }
}

fn main() {
    emit_corpus_location(true);
    emit_profilers_presence();
}
