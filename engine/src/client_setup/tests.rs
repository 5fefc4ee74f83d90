//! Setup's guarantees that need no client: a file changed between preview
//! and apply is refused, an unfinished setup is undone by the next one, and
//! adding then removing the entry gives back the original bytes.

use std::path::Path;

use super::*;

fn request(home: &Path, clients: &[&str], remove: bool) -> SetupRequest {
    SetupRequest {
        clients: clients.iter().map(|c| (*c).to_owned()).collect(),
        scope: Scope::User,
        remove,
        refresh: false,
        rollback: false,
        project_root: home.to_path_buf(),
        // Any existing file: these tests never reach verification.
        executable: Some(std::env::current_exe().unwrap_or_default()),
    }
}

const CURSOR: &str =
    "{\n  // mine\n  \"mcpServers\": {\n    \"other\": { \"command\": \"x\" }\n  }\n}\n";
const CODEX: &str = "# codex\nmodel = \"o4\" # keep\n\n[mcp_servers.other]\ncommand = \"x\"\n";

#[test]
fn a_file_changed_after_the_preview_is_not_written() {
    let home = tempfile::tempdir().unwrap();
    let host = Host::with_home(home.path());
    let path = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, CURSOR).unwrap();
    let req = request(home.path(), &["cursor"], false);
    let preview = plan(&host, &req).unwrap();
    assert_eq!(preview.edits[0].action, EditAction::Add);
    let edited_meanwhile = CURSOR.replace("mine", "edited by the client meanwhile");
    std::fs::write(&path, &edited_meanwhile).unwrap();
    let err = apply(&host, &req, &preview).unwrap_err();
    assert_eq!(err.code, crate::ErrorCode::RevisionConflict, "{err:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited_meanwhile);
}

#[test]
fn an_unfinished_setup_is_undone_by_the_next_one() {
    let home = tempfile::tempdir().unwrap();
    let host = Host::with_home(home.path());
    let path = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, CURSOR).unwrap();
    let created = home.path().join(".gemini/settings.json");
    // What a setup killed after its journal and its writes leaves behind.
    let state = journal::SetupState::new(host.state_dir.clone());
    state
        .begin(&[
            (path.clone(), Some(CURSOR.as_bytes().to_vec())),
            (created.clone(), None),
        ])
        .unwrap();
    std::fs::write(&path, "{ half written").unwrap();
    std::fs::create_dir_all(created.parent().unwrap()).unwrap();
    std::fs::write(&created, "{}").unwrap();
    let req = request(home.path(), &["cursor"], true);
    let preview = plan(&host, &req).unwrap();
    assert_eq!(preview.edits[0].action, EditAction::Refuse, "{preview:?}");
    let report = apply(&host, &req, &preview);
    // The damaged file was put back before planning, so the remove finds
    // nothing of flameox's and the original bytes stay.
    let report = report.unwrap();
    assert_eq!(report.recovered, vec![path.clone(), created.clone()]);
    assert_eq!(report.edits[0].action, EditAction::Absent);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), CURSOR);
    assert!(!created.exists());
    assert!(!host.state_dir.join("journal.json").exists());
}

#[test]
fn adding_then_removing_gives_back_the_original_bytes() {
    let launcher = Launcher::for_executable(Path::new("/opt/flameox/bin/flameox"));
    for (format, original) in [
        (
            ConfigFormat::Json {
                servers_key: "mcpServers",
                typed: false,
            },
            CURSOR,
        ),
        (ConfigFormat::CodexToml, CODEX),
    ] {
        let (added, state) = match format {
            ConfigFormat::Json { servers_key, typed } => {
                json_entry::upsert(original, servers_key, typed, &launcher).unwrap()
            }
            ConfigFormat::CodexToml => toml_entry::upsert(original, &launcher).unwrap(),
        };
        assert_eq!(state, EntryState::Absent);
        assert!(added.contains("/opt/flameox/bin/flameox"), "{added}");
        let removed = match format {
            ConfigFormat::Json { servers_key, .. } => json_entry::remove(&added, servers_key),
            ConfigFormat::CodexToml => toml_entry::remove(&added),
        }
        .unwrap()
        .unwrap();
        assert_eq!(removed, original, "{format:?}");
    }
}
