//! `server.json` (MCP Registry, schema 2025-12-11) describes the server that
//! this checkout builds: names, versions and arguments agree with the crates,
//! the PyPI project, the README's ownership line, and the binary's own CLI.

use serde_json::Value;

const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

fn read(path: &str) -> String {
    std::fs::read_to_string(flameox_tests::repo_root().join(path))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The first `key = "value"` in `text` (enough for our own manifests).
fn toml_string(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
    })
}

#[test]
fn server_json_matches_the_build() {
    let server: Value = serde_json::from_str(&read("server.json")).expect("server.json parses");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(server["$schema"], SCHEMA);
    assert_eq!(server["version"], version);

    let repository = toml_string(&read("Cargo.toml"), "repository").expect("workspace repository");
    assert_eq!(server["repository"]["url"], repository.as_str());
    assert_eq!(server["repository"]["source"], "github");
    let owner = repository
        .trim_start_matches("https://github.com/")
        .split('/')
        .next()
        .unwrap_or("");
    let name = format!("io.github.{owner}/flameox");
    assert_eq!(server["name"], name.as_str());
    assert!(
        read("README.md").contains(&format!("mcp-name: {name}")),
        "the README (the crate's readme) proves ownership with an mcp-name line"
    );

    let description = server["description"].as_str().expect("description");
    assert!(
        (1..=100).contains(&description.chars().count()),
        "description ≤ 100 chars"
    );

    let crate_name = toml_string(&read("cli/Cargo.toml"), "name").expect("cli crate name");
    let pypi_name = toml_string(&read("cli/pyproject.toml"), "name").expect("pypi name");
    let packages = server["packages"].as_array().expect("packages");
    let mut kinds = Vec::new();
    for package in packages {
        let kind = package["registryType"].as_str().expect("registryType");
        kinds.push(kind);
        assert_eq!(package["version"], version, "{kind}");
        assert_eq!(package["transport"]["type"], "stdio", "{kind}");
        match kind {
            "cargo" => {
                assert_eq!(package["identifier"], crate_name.as_str());
                assert!(
                    package.get("runtimeHint").is_none(),
                    "cargo takes no runtimeHint"
                );
            }
            "pypi" => {
                assert_eq!(package["identifier"], pypi_name.as_str());
                assert_eq!(package["runtimeHint"], "uvx");
            }
            other => panic!("unexpected registryType {other}"),
        }
        let argv = arguments(package);
        assert_eq!(argv, ["mcp", "serve", "--project-root", "."], "{kind}");
        // The binary accepts exactly these arguments.
        let out = std::process::Command::new(flameox_tests::flameox_bin())
            .args(&argv)
            .arg("--help")
            .output()
            .expect("run flameox");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    kinds.sort();
    assert_eq!(kinds, ["cargo", "pypi"]);
}

/// `packageArguments` as the argv a client would build.
fn arguments(package: &Value) -> Vec<String> {
    let mut argv = Vec::new();
    for arg in package["packageArguments"].as_array().into_iter().flatten() {
        match arg["type"].as_str() {
            Some("positional") => argv.push(arg["value"].as_str().unwrap_or("").to_owned()),
            Some("named") => {
                argv.push(arg["name"].as_str().unwrap_or("").to_owned());
                if let Some(value) = arg["value"].as_str() {
                    argv.push(value.to_owned());
                }
            }
            other => panic!("unknown argument type {other:?}"),
        }
    }
    argv
}

/// The wheel's version is the workspace's (maturin reads it from the
/// crate: `dynamic = ["version"]`, never a second copy), it is built from
/// the stripped distribution profile, and `flameox setup` writes the same
/// arguments the registry entry advertises.
#[test]
fn crate_wheel_server_json_and_setup_agree() {
    let pyproject = read("cli/pyproject.toml");
    let doc: toml::Value = toml::from_str(&pyproject).expect("pyproject.toml parses");
    let project = &doc["project"];
    assert!(
        project.get("version").is_none(),
        "the wheel's version comes from the workspace, not a copy"
    );
    assert_eq!(
        project["dynamic"].as_array().map(|a| a.len()),
        Some(1),
        "dynamic = [\"version\"]"
    );
    assert_eq!(project["dynamic"][0].as_str(), Some("version"));
    let maturin = &doc["tool"]["maturin"];
    assert_eq!(maturin["bindings"].as_str(), Some("bin"));
    assert_eq!(maturin["profile"].as_str(), Some("dist"));

    let workspace: toml::Value = toml::from_str(&read("Cargo.toml")).expect("Cargo.toml parses");
    assert_eq!(
        workspace["workspace"]["package"]["version"].as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let cli: toml::Value = toml::from_str(&read("cli/Cargo.toml")).expect("cli/Cargo.toml");
    assert_eq!(
        cli["package"]["version"]["workspace"].as_bool(),
        Some(true),
        "the binary crate takes the workspace version"
    );
    let dist = &workspace["profile"]["dist"];
    assert_eq!(dist["strip"].as_str(), Some("symbols"));
    assert_eq!(dist["lto"].as_str(), Some("fat"));

    let server: Value = serde_json::from_str(&read("server.json")).expect("server.json parses");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(server["version"], version);
    for package in server["packages"].as_array().expect("packages") {
        assert_eq!(package["version"], version);
        assert_eq!(
            arguments(package),
            flameox_engine::client_setup::launcher::SERVE_ARGS,
            "setup's launcher and the registry entry start the same server"
        );
    }
    let out = std::process::Command::new(flameox_tests::flameox_bin())
        .arg("--version")
        .output()
        .expect("flameox --version");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.split_whitespace().nth(1), Some(version), "{text}");
}
