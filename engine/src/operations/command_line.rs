//! A catalogued call (`{operation, arguments}`) as the command line a
//! person types: the operation's declared path, its positional arguments,
//! then flags, quoted for a POSIX shell.

use serde_json::Value;

/// `start_ns` → `start-ns`.
pub fn flag_name(property: &str) -> String {
    property.replace('_', "-")
}

/// A next step (`{operation, arguments}`) as a command line: catalogued
/// operations by their declared path, positional arguments and flags;
/// others (not yet in the catalog) by name with their arguments.
pub fn command_line(operation: &str, arguments: &Value) -> String {
    let Some(op) = super::by_name(operation) else {
        return format!("{operation} {arguments}");
    };
    let mut words = vec!["flameox".to_owned()];
    words.extend(op.cli.iter().map(|w| (*w).to_owned()));
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for positional in op.positional {
        match arguments.get(*positional) {
            Some(Value::Array(items)) => words.extend(items.iter().map(|v| shell_word(&text(v)))),
            Some(v) => words.push(shell_word(&text(v))),
            None => {}
        }
    }
    // The cursor last: the words before it read as the call it continues.
    let flags = arguments.as_object().into_iter().flatten();
    let (cursor, flags): (Vec<_>, Vec<_>) = flags.partition(|(name, _)| *name == "cursor");
    for (name, value) in flags.into_iter().chain(cursor) {
        if op.positional.contains(&name.as_str()) {
            continue;
        }
        match value {
            Value::Bool(true) => words.push(format!("--{}", flag_name(name))),
            Value::Bool(false) | Value::Null => {}
            Value::Object(pairs) => {
                for (key, value) in pairs {
                    words.push(format!("--{}", flag_name(name)));
                    words.push(shell_word(&format!("{key}={}", text(value))));
                }
            }
            Value::Array(items) => {
                for item in items {
                    words.push(format!("--{}", flag_name(name)));
                    words.push(shell_word(&text(item)));
                }
            }
            v => {
                words.push(format!("--{}", flag_name(name)));
                words.push(shell_word(&text(v)));
            }
        }
    }
    words.join(" ")
}

/// A word quoted for a POSIX shell when it needs to be.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/#@%+=,".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
