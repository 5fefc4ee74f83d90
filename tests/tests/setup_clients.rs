//! `flameox setup` against each client's real configuration shape, with
//! comments and unrelated entries: the dry-run shows the edit and writes
//! nothing, a launcher that fails the MCP initialize is rolled back to the
//! original bytes, the applied edit keeps every line the user wrote and is
//! verified, a second run changes nothing, `--verify` holds, and `--remove`
//! gives back the original file.

use std::path::{Path, PathBuf};
use std::process::Output;

use flameox_tests::{Project, flameox_bin};
use serde_json::Value;

/// A temporary home and project; every command runs with HOME pointing at it.
struct Machine {
    home: tempfile::TempDir,
    project: Project,
}

impl Machine {
    fn new() -> Machine {
        Machine {
            home: tempfile::tempdir().expect("home"),
            project: Project::bare(),
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.project.command(args);
        cmd.env("HOME", self.home())
            .env("PATH", self.home().join("bin"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("CODEX_HOME");
        cmd.output().expect("running flameox setup")
    }

    /// `--json`; returns (exit code, the document on stdout).
    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{args:?}: stdout is not JSON: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), doc)
    }

    fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let path = self.home().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// An executable that is not an MCP server.
    fn broken_executable(&self) -> PathBuf {
        let path = self.write("broken/flameox", b"#!/bin/sh\necho 'not an MCP server'\n");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

fn bin() -> String {
    std::fs::canonicalize(flameox_bin())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Every line of `original` is still in `edited`, in order (JSON may add
/// the comma a new sibling needs after the last entry).
fn keeps_every_line(original: &str, edited: &str) -> bool {
    let mut lines = edited.lines();
    original
        .lines()
        .all(|o| lines.any(|e| e == o || e.replace(',', "") == o.replace(',', "")))
}

fn exercise(client: &str, rel: &str, original: &str) {
    let m = Machine::new();
    let path = m.write(rel, original.as_bytes());
    let client_args = ["setup", "--client", client];
    let with = |extra: &[&str]| -> Vec<String> {
        client_args
            .iter()
            .chain(extra)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let call = |extra: &[&str]| {
        let args = with(extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        m.json(&refs)
    };
    let bytes = || std::fs::read_to_string(&path).unwrap();

    // Dry-run: the exact edit, nothing written.
    let (code, plan) = call(&["--dry-run"]);
    assert_eq!(code, 0, "{plan}");
    let edit = &plan["edits"][0];
    assert_eq!(edit["action"], "add", "{plan}");
    assert_eq!(edit["path"], path.to_string_lossy().as_ref());
    let added: Vec<&str> = edit["diff"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .filter(|l| l.starts_with('+'))
        .collect();
    assert!(added.iter().any(|l| l.contains(&bin())), "{plan}");
    assert_eq!(bytes(), original);

    // No confirmation on a pipe: refused, nothing written.
    let (code, err) = call(&[]);
    assert_eq!((code, err["code"].as_str()), (2, Some("INVALID_ARGUMENTS")));
    assert_eq!(bytes(), original);

    // A launcher that fails the initialize: every byte put back.
    let broken = m.broken_executable();
    let broken = broken.to_string_lossy();
    let (code, err) = call(&["--executable", &broken, "--yes"]);
    assert_eq!(
        (code, err["code"].as_str()),
        (4, Some("PROCESS_FAILED")),
        "{err}"
    );
    assert!(
        err["message"].as_str().unwrap().contains("put back"),
        "{err}"
    );
    assert_eq!(bytes(), original, "rolled back");
    assert!(
        !m.home()
            .join(".local/state/flameox/setup/journal.json")
            .exists()
    );

    // Applied: verified, every line the user wrote kept, a backup made.
    let (code, report) = call(&["--yes"]);
    assert_eq!(code, 0, "{report}");
    let edit = &report["edits"][0];
    assert_eq!(
        (report["applied"].as_bool(), edit["action"].as_str()),
        (Some(true), Some("add"))
    );
    assert_eq!(edit["verified"]["server_name"], "flameox", "{report}");
    let applied = bytes();
    assert!(keeps_every_line(original, &applied), "{applied}");
    assert!(applied.contains(&bin()), "{applied}");
    assert!(!applied.contains("--init"), "never --init");
    let backup = edit["backup"].as_str().expect("a backup of the original");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), original);

    // Idempotent.
    let (code, again) = call(&["--yes"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["edits"][0]["action"], "unchanged");
    assert_eq!(bytes(), applied);
    let (code, verified) = call(&["--verify"]);
    assert_eq!(code, 0, "{verified}");

    // Remove: only flameox's entry goes; the original file comes back.
    let (code, removed) = call(&["--remove", "--yes"]);
    assert_eq!(code, 0, "{removed}");
    assert_eq!(removed["edits"][0]["action"], "remove");
    assert_eq!(bytes(), original);
    let (code, err) = call(&["--verify"]);
    assert_eq!(
        (code, err["code"].as_str()),
        (1, Some("CLIENT_NOT_CONNECTED")),
        "{err}"
    );
}

#[test]
fn claude_code() {
    exercise(
        "claude-code",
        ".claude.json",
        r#"{
  // Claude Code's own state lives beside the servers.
  "numStartups": 12,
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "gh-mcp",
      "args": []
    }
  },
  "projects": {
    "/src/app": { "allowedTools": [] }
  }
}
"#,
    );
}

#[test]
fn claude_desktop() {
    exercise(
        "claude-desktop",
        ".config/Claude/claude_desktop_config.json",
        r#"{
  "globalShortcut": "Ctrl+Space", // the user's
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
    }
  }
}
"#,
    );
}

#[test]
fn cursor() {
    exercise(
        "cursor",
        ".cursor/mcp.json",
        r#"{
  // servers for every project
  "mcpServers": {
    "linear": { "url": "https://mcp.linear.app/sse" }, // remote
  },
}
"#,
    );
}

#[test]
fn vscode() {
    exercise(
        "vscode",
        ".config/Code/User/mcp.json",
        "{\n\t/* VS Code user servers */\n\t\"inputs\": [],\n\t\"servers\": {\n\t\t\"playwright\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"npx\",\n\t\t\t\"args\": [\"@playwright/mcp\"]\n\t\t}\n\t}\n}\n",
    );
}

#[test]
fn windsurf() {
    exercise(
        "windsurf",
        ".codeium/windsurf/mcp_config.json",
        r#"{
  "mcpServers": {
    // disabled for now
    "sentry": { "command": "sentry-mcp", "disabled": true }
  }
}
"#,
    );
}

#[test]
fn codex() {
    exercise(
        "codex",
        ".codex/config.toml",
        r#"# Codex settings
model = "gpt-5-codex"   # the default model
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-mcp"  # local docs
args = ["--port", "0"]

[profiles.fast]
model = "gpt-5-mini"
"#,
    );
}

#[test]
fn gemini() {
    exercise(
        "gemini",
        ".gemini/settings.json",
        r#"{
  // Gemini CLI reads comments in settings.json
  "theme": "GitHub",
  "mcpServers": {
    "bigquery": { "command": "bq-mcp", "args": ["--project", "demo"], "timeout": 30000 }
  }
}
"#,
    );
}

#[test]
fn discovery_finds_installed_clients_by_their_folders_and_path() {
    let m = Machine::new();
    std::fs::create_dir_all(m.home().join(".cursor")).unwrap();
    std::fs::create_dir_all(m.home().join(".codex")).unwrap();
    let gemini = m.write("bin/gemini", b"#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gemini, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, plan) = m.json(&["setup", "--dry-run"]);
    assert_eq!(code, 0, "{plan}");
    let mut found = Vec::new();
    for edit in plan["edits"].as_array().unwrap() {
        let name = edit["client"].as_str().unwrap();
        if edit["action"] == "add" {
            assert!(edit["installed"].is_string(), "{edit}");
            found.push(name);
        } else {
            assert_eq!(edit["action"], "skip", "{edit}");
            assert!(edit["installed"].is_null(), "{edit}");
        }
    }
    assert_eq!(found, ["cursor", "codex", "gemini"]);
    // Nothing was written by a dry-run.
    assert!(!m.home().join(".cursor/mcp.json").exists());
    // --yes without a target is refused.
    let (code, err) = m.json(&["setup", "--yes"]);
    assert_eq!(
        (code, err["code"].as_str()),
        (2, Some("INVALID_ARGUMENTS")),
        "{err}"
    );
}

#[test]
fn project_scope_writes_the_projects_file_and_verifies_there() {
    let m = Machine::new();
    let (code, report) = m.json(&[
        "setup",
        "--client",
        "cursor",
        "--client",
        "claude-desktop",
        "--scope",
        "project",
        "--yes",
    ]);
    assert_eq!(code, 0, "{report}");
    let edits = report["edits"].as_array().unwrap();
    assert_eq!(edits[0]["action"], "add");
    assert_eq!(edits[0]["verified"]["server_name"], "flameox");
    assert_eq!(edits[1]["action"], "skip");
    assert!(
        edits[1]["reason"]
            .as_str()
            .unwrap()
            .contains("no project configuration")
    );
    let written = m.project.path().join(".cursor/mcp.json");
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("\"--project-root\", \".\""), "{text}");
    // Verification ran in the project and left no workspace behind.
    assert!(!m.project.path().join(".flameox").exists());
}

#[test]
fn malformed_or_non_utf8_configurations_are_refused_not_replaced() {
    let m = Machine::new();
    for bytes in [
        &b"{ \"mcpServers\": [1, 2] }\n"[..],
        b"{ \"mcpServers\": ",
        b"\xff\xfe{}",
    ] {
        let path = m.write(".gemini/settings.json", bytes);
        let (code, err) = m.json(&["setup", "--client", "gemini", "--yes"]);
        assert_eq!(
            (code, err["code"].as_str()),
            (2, Some("INVALID_ARGUMENTS")),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
    let path = m.write(".codex/config.toml", b"[mcp_servers\n");
    let (code, _) = m.json(&["setup", "--client", "codex", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&path).unwrap(), b"[mcp_servers\n");
}

#[test]
fn a_symlinked_configuration_is_written_through_and_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let m = Machine::new();
    let target = m.write("dotfiles/cursor-mcp.json", b"{\n  \"mcpServers\": {}\n}\n");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::create_dir_all(m.home().join(".cursor")).unwrap();
    let link = m.home().join(".cursor/mcp.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, report) = m.json(&["setup", "--client", "cursor", "--yes"]);
    assert_eq!(code, 0, "{report}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read_to_string(&target).unwrap().contains(&bin()));
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn the_terminal_plan_reads_as_an_edit_and_says_how_to_apply_it() {
    let m = Machine::new();
    m.write(".codex/config.toml", b"# mine\n");
    let out = m.run(&["setup", "--client", "codex", "--dry-run"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("dry run: nothing written"), "{text}");
    assert!(text.contains("+[mcp_servers.flameox]"), "{text}");
    assert!(
        text.contains("flameox setup --client codex --yes"),
        "{text}"
    );
}

#[test]
fn verify_checks_the_clients_that_were_connected_not_every_installed_one() {
    let m = Machine::new();
    m.write(".cursor/mcp.json", b"{\n  \"mcpServers\": {}\n}\n");
    m.write(".codex/config.toml", b"# mine\n");
    let (code, report) = m.json(&["setup", "--client", "cursor", "--yes"]);
    assert_eq!(code, 0, "{report}");
    // Codex is installed but was left out on purpose: verify holds.
    let (code, verified) = m.json(&["setup", "--verify"]);
    assert_eq!(code, 0, "{verified}");
    let by_client = |name: &str| {
        verified["edits"]
            .as_array()
            .and_then(|edits| edits.iter().find(|e| e["client"] == name))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(by_client("cursor")["verified"]["server_name"], "flameox");
    assert_eq!(by_client("codex")["action"], "absent", "{verified}");
    // Named, it must be connected.
    let (code, err) = m.json(&["setup", "--verify", "--client", "codex"]);
    assert_eq!(
        (code, err["code"].as_str()),
        (1, Some("CLIENT_NOT_CONNECTED")),
        "{err}"
    );
    // Nothing connected at all is not a verified setup either.
    let (code, _) = m.json(&["setup", "--client", "cursor", "--remove", "--yes"]);
    assert_eq!(code, 0);
    let (code, err) = m.json(&["setup", "--verify"]);
    assert_eq!(
        (code, err["code"].as_str()),
        (1, Some("CLIENT_NOT_CONNECTED")),
        "{err}"
    );
}

/// `--refresh` re-points only the clients already connected at this
/// executable; `--rollback` puts each one's previous launcher back,
/// verified by an MCP initialize, and a second rollback goes forward again;
/// an entry someone else changed since is left alone.
#[test]
fn refresh_repoints_connected_clients_and_rollback_restores_the_previous_launcher() {
    let m = Machine::new();
    let cursor = m.write(".cursor/mcp.json", b"{\n  \"mcpServers\": {}\n}\n");
    let gemini = m.write(".gemini/settings.json", b"{}\n");
    // An older flameox at another path: a copy of this one.
    let old = m.home().join("old/flameox");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin(), &old).unwrap();
    let old_text = old.to_string_lossy().into_owned();
    let (code, report) = m.json(&[
        "setup",
        "--client",
        "cursor",
        "--executable",
        &old_text,
        "--yes",
    ]);
    assert_eq!(code, 0, "{report}");
    let cursor_text = || std::fs::read_to_string(&cursor).unwrap();
    assert!(cursor_text().contains(&old_text));

    let (code, refreshed) = m.json(&["setup", "--refresh", "--yes"]);
    assert_eq!(code, 0, "{refreshed}");
    assert_eq!(refreshed["operation"], "refresh");
    let edit = |report: &Value, client: &str| {
        report["edits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["client"] == client)
            .cloned()
            .unwrap_or_else(|| panic!("no {client} in {report}"))
    };
    assert_eq!(
        edit(&refreshed, "cursor")["action"],
        "update",
        "{refreshed}"
    );
    assert_eq!(
        edit(&refreshed, "cursor")["verified"]["server_name"],
        "flameox"
    );
    let gemini_edit = edit(&refreshed, "gemini");
    assert_eq!(gemini_edit["action"], "skip", "{refreshed}");
    assert!(
        gemini_edit["reason"]
            .as_str()
            .unwrap()
            .contains("not connected")
    );
    assert!(cursor_text().contains(&bin()) && !cursor_text().contains(&old_text));
    assert_eq!(std::fs::read_to_string(&gemini).unwrap(), "{}\n");

    let (code, rolled) = m.json(&["setup", "--rollback", "--yes"]);
    assert_eq!(code, 0, "{rolled}");
    assert_eq!(rolled["operation"], "rollback");
    assert_eq!(edit(&rolled, "cursor")["action"], "update");
    assert_eq!(
        edit(&rolled, "cursor")["verified"]["server_name"],
        "flameox"
    );
    assert!(cursor_text().contains(&old_text), "{}", cursor_text());

    let (code, forward) = m.json(&["setup", "--rollback", "--yes"]);
    assert_eq!(code, 0, "{forward}");
    assert!(cursor_text().contains(&bin()) && !cursor_text().contains(&old_text));

    // Someone else's later edit is not undone.
    let edited = cursor_text().replace(&bin(), "/opt/other/flameox");
    std::fs::write(&cursor, &edited).unwrap();
    let (code, left) = m.json(&["setup", "--rollback", "--dry-run"]);
    assert_eq!(code, 0, "{left}");
    let cursor_edit = edit(&left, "cursor");
    assert_eq!(cursor_edit["action"], "skip");
    assert!(
        cursor_edit["reason"]
            .as_str()
            .unwrap()
            .contains("changed since")
    );
    assert_eq!(cursor_text(), edited);
}
