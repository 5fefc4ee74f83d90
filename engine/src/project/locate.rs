//! Which key of `flameox.toml` a deserialization error points at.
//!
//! The TOML deserializer reports a byte span: the key itself for an unknown
//! key, the value for a wrong type, and the whole table (from its header to
//! its last value) for a missing key. Guessing the key from the text around
//! the span goes wrong as soon as the span starts at a header (the header
//! above it belongs to the previous table), so the span is matched against
//! the spans of the parsed document instead: the deepest key or value that
//! contains it names the key path, and a missing key is appended to the
//! table it is missing from.

use std::ops::Range;

use toml_edit::{ImDocument, Item, TableLike, Value};

/// The dotted key path (`experiments.grow.confidence_level`,
/// `workloads.a.argv[2]`) of the error at `span` with `message`, or `None`
/// when the text does not parse as TOML (a syntax error) or nothing
/// contains the span.
pub fn key_path_at(text: &str, span: &Range<usize>, message: &str) -> Option<String> {
    let doc = ImDocument::parse(text).ok()?;
    let mut path = Vec::new();
    if !search_table(doc.as_table(), span, &mut path) {
        return None;
    }
    if let Some(missing) = missing_field(message) {
        path.push(missing.to_owned());
    }
    Some(join(&path))
}

/// `confidence_level` of "missing field `confidence_level`".
fn missing_field(message: &str) -> Option<&str> {
    message
        .trim()
        .strip_prefix("missing field `")?
        .split('`')
        .next()
        .filter(|name| !name.is_empty())
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// Extends `path` with the deepest entry of `table` holding `span`.
fn search_table(table: &dyn TableLike, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    for (name, item) in table.iter() {
        path.push(name.to_owned());
        let key_span = table.get_key_value(name).and_then(|(key, _)| key.span());
        if key_span.is_some_and(|k| contains(&k, span)) || search_item(item, span, path) {
            return true;
        }
        path.pop();
    }
    false
}

/// True when `item` (or something inside it, whose path is pushed) holds `span`.
fn search_item(item: &Item, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    let inside = match item {
        Item::Table(table) => search_table(table, span, path),
        Item::ArrayOfTables(tables) => tables.iter().enumerate().any(|(i, table)| {
            path.push(format!("[{i}]"));
            let found =
                search_table(table, span, path) || table.span().is_some_and(|s| contains(&s, span));
            if !found {
                path.pop();
            }
            found
        }),
        Item::Value(value) => search_value(value, span, path),
        Item::None => false,
    };
    inside || item.span().is_some_and(|s| contains(&s, span))
}

fn search_value(value: &Value, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    match value {
        Value::InlineTable(table) => search_table(table, span, path),
        Value::Array(array) => array.iter().enumerate().any(|(i, element)| {
            path.push(format!("[{i}]"));
            let found = search_value(element, span, path)
                || element.span().is_some_and(|s| contains(&s, span));
            if !found {
                path.pop();
            }
            found
        }),
        _ => false,
    }
}

/// `a`, `b`, `[2]` → `a.b[2]`.
fn join(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if !out.is_empty() && !segment.starts_with('[') {
            out.push('.');
        }
        out.push_str(segment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(text: &str) -> String {
        let err = toml::from_str::<super::super::ProjectConfig>(text).unwrap_err();
        key_path_at(text, &err.span().unwrap(), err.message()).unwrap_or_default()
    }

    const WORKLOAD: &str = "[workloads.pairs]\nargv = [\"x\", \"{n}\"]\ntimeout_seconds = 5\n\
                            parameters = { n = [1, 2] }\n";

    #[test]
    fn a_missing_key_is_named_in_its_own_table_not_the_one_above() {
        let text = format!(
            "{WORKLOAD}\n[experiments.grow]\nworkload = \"pairs\"\nrepetitions = 3\nseed = 7\n\
             primary_metric = \"wall_time\"\npolarity = \"lower_is_better\"\n\
             practical_threshold = 0.05\n"
        );
        assert_eq!(path_of(&text), "experiments.grow.confidence_level");
    }

    #[test]
    fn wrong_types_unknown_keys_and_inline_tables_are_located() {
        let wrong_type = WORKLOAD.replace("timeout_seconds = 5", "timeout_seconds = \"five\"");
        assert_eq!(path_of(&wrong_type), "workloads.pairs.timeout_seconds");
        let nested = format!("{WORKLOAD}[workloads.pairs.oracle]\nexit_code = [0]\n");
        assert_eq!(path_of(&nested), "workloads.pairs.oracle.exit_code");
        let in_array = WORKLOAD.replace("\"{n}\"]", "\"{n}\", 3]");
        assert_eq!(path_of(&in_array), "workloads.pairs.argv[2]");
        let inline = format!(
            "{WORKLOAD}[experiments.grow]\nworkload = \"pairs\"\nscaling = {{ parameter = \"n\" }}\n"
        );
        assert_eq!(path_of(&inline), "experiments.grow.scaling.values");
    }
}
