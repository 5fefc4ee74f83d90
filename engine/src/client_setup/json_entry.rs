//! flameox's entry in a JSON or JSONC client configuration, edited through
//! a concrete syntax tree (`jsonc-parser`) so every comment, unrelated
//! server, key order and indentation the user wrote stays as it was.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::launcher::Launcher;
use super::{ENTRY_NAME, EntryState};

/// The fields flameox writes, in the order it writes them.
fn fields(launcher: &Launcher, typed: bool) -> Vec<(String, Value)> {
    let mut fields = Vec::new();
    if typed {
        fields.push(("type".to_owned(), Value::from("stdio")));
    }
    fields.push(("command".to_owned(), Value::from(launcher.command.clone())));
    fields.push(("args".to_owned(), Value::from(launcher.args.clone())));
    fields
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::Null => CstInputValue::Null,
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

fn parse(text: &str) -> Result<CstRootNode, String> {
    CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| e.to_string())
}

/// The servers object (`create`: made when missing); a top level or a
/// servers value that is not an object is refused, never replaced.
fn servers(root: &CstRootNode, key: &str, create: bool) -> Result<Option<CstObject>, String> {
    let top = match root.value() {
        None if create => root.object_value_or_set(),
        None => return Ok(None),
        Some(value) => value
            .as_object()
            .ok_or_else(|| "the top level is not a JSON object".to_owned())?,
    };
    match top.get(key) {
        Some(prop) => prop
            .value()
            .and_then(|v| v.as_object())
            .map(Some)
            .ok_or_else(|| format!("`{key}` is not a JSON object")),
        None if create => Ok(Some(top.object_value_or_set(key))),
        None => Ok(None),
    }
}

/// Adds or updates flameox's entry; fields the user added to it (`env`,
/// `timeout`, …) are kept. Returns the new text and what was there.
pub fn upsert(
    text: &str,
    key: &str,
    typed: bool,
    launcher: &Launcher,
) -> Result<(String, EntryState), String> {
    let root = parse(text)?;
    let Some(servers) = servers(&root, key, true)? else {
        return Err(format!("`{key}` could not be made"));
    };
    let wanted = fields(launcher, typed);
    let state = match servers.get(ENTRY_NAME) {
        None => {
            let object = wanted.iter().map(|(k, v)| (k.clone(), input(v))).collect();
            servers.append(ENTRY_NAME, CstInputValue::Object(object));
            EntryState::Absent
        }
        Some(prop) => match prop.value().and_then(|v| v.as_object()) {
            Some(entry) => {
                let mut same = true;
                for (name, value) in &wanted {
                    let current = entry
                        .get(name)
                        .and_then(|p| p.value())
                        .and_then(|v| v.to_serde_value());
                    if current.as_ref() == Some(value) {
                        continue;
                    }
                    same = false;
                    match entry.get(name) {
                        Some(p) => p.set_value(input(value)),
                        None => {
                            entry.append(name, input(value));
                        }
                    }
                }
                if same {
                    EntryState::Same
                } else {
                    EntryState::Different
                }
            }
            None => {
                let object = wanted.iter().map(|(k, v)| (k.clone(), input(v))).collect();
                prop.set_value(CstInputValue::Object(object));
                EntryState::Different
            }
        },
    };
    let mut out = root.to_string();
    if text.trim().is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok((out, state))
}

/// Removes flameox's entry and nothing else (`None`: there was none).
pub fn remove(text: &str, key: &str) -> Result<Option<String>, String> {
    let root = parse(text)?;
    let Some(servers) = servers(&root, key, false)? else {
        return Ok(None);
    };
    let Some(prop) = servers.get(ENTRY_NAME) else {
        return Ok(None);
    };
    prop.remove();
    Ok(Some(root.to_string()))
}

/// The launcher flameox's entry holds (`None`: no entry).
pub fn read(text: &str, key: &str) -> Result<Option<Launcher>, String> {
    let root = parse(text)?;
    let Some(servers) = servers(&root, key, false)? else {
        return Ok(None);
    };
    let Some(entry) = servers.get(ENTRY_NAME).and_then(|p| p.value()) else {
        return Ok(None);
    };
    let value = entry.to_serde_value().unwrap_or(Value::Null);
    Ok(Launcher::from_json(&value))
}
