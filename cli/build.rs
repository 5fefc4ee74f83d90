//! Stamps the build with its commit and profile for `flameox --version`
//! (`unknown` outside a git checkout, e.g. a build from a source archive).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    // Cargo's PROFILE says only debug or release; the folder the build
    // writes to names the profile itself (`dist` for the wheel):
    // <target>/<profile>/build/<package>/out.
    let profile = std::env::var_os("OUT_DIR")
        .and_then(|out| {
            std::path::Path::new(&out)
                .ancestors()
                .nth(3)
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        })
        .or_else(|| std::env::var("PROFILE").ok())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=FLAMEOX_COMMIT={commit}");
    println!("cargo:rustc-env=FLAMEOX_PROFILE={profile}");
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
}
