//! flameox's entry in Codex's `config.toml` (`[mcp_servers.flameox]`),
//! edited with `toml_edit` so comments, formatting and every other table
//! survive.

use toml_edit::{Array, DocumentMut, Item, Table, TableLike, value};

use super::launcher::Launcher;
use super::{ENTRY_NAME, EntryState};

const SERVERS_KEY: &str = "mcp_servers";

fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>().map_err(|e| e.to_string())
}

fn args_value(launcher: &Launcher) -> Item {
    let mut array = Array::new();
    for arg in &launcher.args {
        array.push(arg.as_str());
    }
    value(array)
}

fn launcher_of(entry: &dyn TableLike) -> Option<Launcher> {
    let command = entry.get("command")?.as_str()?.to_owned();
    let args = entry
        .get("args")
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Some(Launcher { command, args })
}

/// Adds or updates `[mcp_servers.flameox]`; other keys in it are kept.
pub fn upsert(text: &str, launcher: &Launcher) -> Result<(String, EntryState), String> {
    let mut doc = parse(text)?;
    let servers = doc.as_table_mut().entry(SERVERS_KEY).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let servers = servers
        .as_table_like_mut()
        .ok_or_else(|| format!("`{SERVERS_KEY}` is not a table"))?;
    let state = match servers.get_mut(ENTRY_NAME) {
        None => {
            let mut table = Table::new();
            table.insert("command", value(launcher.command.as_str()));
            table.insert("args", args_value(launcher));
            servers.insert(ENTRY_NAME, Item::Table(table));
            EntryState::Absent
        }
        Some(item) => {
            let entry = item
                .as_table_like_mut()
                .ok_or_else(|| format!("`{SERVERS_KEY}.{ENTRY_NAME}` is not a table"))?;
            if launcher_of(entry).as_ref() == Some(launcher) {
                EntryState::Same
            } else {
                entry.insert("command", value(launcher.command.as_str()));
                entry.insert("args", args_value(launcher));
                EntryState::Different
            }
        }
    };
    Ok((doc.to_string(), state))
}

/// Removes `[mcp_servers.flameox]` and nothing else (`None`: there was none).
pub fn remove(text: &str) -> Result<Option<String>, String> {
    let mut doc = parse(text)?;
    let Some(servers) = doc
        .as_table_mut()
        .get_mut(SERVERS_KEY)
        .and_then(|s| s.as_table_like_mut())
    else {
        return Ok(None);
    };
    if servers.remove(ENTRY_NAME).is_none() {
        return Ok(None);
    }
    Ok(Some(doc.to_string()))
}

/// The launcher `[mcp_servers.flameox]` holds (`None`: no entry).
pub fn read(text: &str) -> Result<Option<Launcher>, String> {
    let doc = parse(text)?;
    Ok(doc
        .as_table()
        .get(SERVERS_KEY)
        .and_then(|s| s.as_table_like())
        .and_then(|s| s.get(ENTRY_NAME))
        .and_then(|e| e.as_table_like())
        .and_then(launcher_of))
}
