//! The binary starts, documents every command with an example, and exits with
//! the contract's codes for usage errors. (Having an integration test here
//! also makes `cargo nextest run --workspace` build the `flameox` binary that
//! the end-to-end tests in `tests/` run.)

use std::process::Command;

fn flameox(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flameox"))
        .args(args)
        .output()
        .expect("run flameox")
}

#[test]
fn help_lists_every_command_with_an_example() {
    let out = flameox(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for command in [
        "init",
        "status",
        "config",
        "validate",
        "catalog",
        "recover",
        "import",
        "analyze",
        "stacks",
        "trace",
        "runs",
        "artifacts",
    ] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(command))
            .unwrap_or_else(|| panic!("{command} missing"));
        assert!(
            line.contains("Example: `flameox"),
            "{command} has no example: {line}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(flameox(&["no-such-command"]).status.code(), Some(2));
    assert_eq!(flameox(&["analyze", "hotspots"]).status.code(), Some(2));
    assert_eq!(flameox(&["--version"]).status.code(), Some(0));
}
