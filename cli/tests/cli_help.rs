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
        "setup",
        "runs",
        "artifacts",
    ] {
        // The command's entry: its line and the wrapped lines under it
        // (indented deeper than the two spaces of a command).
        let mut lines = text
            .lines()
            .skip_while(|l| !(l.starts_with("  ") && l.trim_start().starts_with(command)));
        let first = lines.next().unwrap_or_else(|| panic!("{command} missing"));
        let entry: Vec<&str> = std::iter::once(first)
            .chain(lines.take_while(|l| l.starts_with("   ")))
            .map(str::trim)
            .collect();
        let entry = entry.join(" ");
        assert!(
            entry.contains("Example: `flameox"),
            "{command} has no example: {entry}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(flameox(&["no-such-command"]).status.code(), Some(2));
    assert_eq!(flameox(&["analyze", "hotspots"]).status.code(), Some(2));
    assert_eq!(flameox(&["--version"]).status.code(), Some(0));
}

/// Colour only on a terminal, and never with NO_COLOR: help on a pseudo
/// terminal (util-linux `script`) has escape codes, piped or NO_COLOR has none.
#[cfg(target_os = "linux")]
#[test]
fn colours_only_on_a_terminal_and_never_with_no_color() {
    let bin = env!("CARGO_BIN_EXE_flameox");
    let on_terminal = |no_color: bool| {
        let mut cmd = Command::new("script");
        cmd.args(["-qec", &format!("{bin} setup --help"), "/dev/null"]);
        if no_color {
            cmd.env("NO_COLOR", "1");
        } else {
            cmd.env_remove("NO_COLOR");
        }
        let out = cmd
            .output()
            .expect("util-linux script runs a pseudo terminal");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        on_terminal(false).contains("\x1b["),
        "help is coloured on a terminal"
    );
    assert!(
        !on_terminal(true).contains('\x1b'),
        "NO_COLOR turns colour off"
    );
    let piped = Command::new(bin)
        .args(["setup", "--help"])
        .env_remove("NO_COLOR")
        .output()
        .expect("run flameox");
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\x1b'));
}
