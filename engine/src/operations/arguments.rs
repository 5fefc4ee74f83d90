//! Strict argument checking against a tool's input schema, before any
//! decoding, so malformed calls get `INVALID_ARGUMENTS` with `details.fields`
//! (and the closest valid name for a misspelled one) instead of a serde text.

use crate::error::{ErrorCode, FlameoxError, closest, near_spelling};
use serde_json::{Map, Value, json};

/// Names agents reach for, by what they mean, and the argument that holds
/// it (one vocabulary: `target` names what is analysed, `base` the other
/// side of a comparison). Used only when the tool has that argument.
const MEANINGS: &[(&str, &[&str])] = &[
    (
        "target",
        &[
            "run_id",
            "run",
            "runs",
            "artifact_id",
            "artifact",
            "id",
            "trace",
            "targets",
            "run_ids",
            "trace_id",
            "target_id",
        ],
    ),
    (
        "base",
        &[
            "baseline",
            "compare_to",
            "base_run",
            "base_id",
            "against",
            "reference_run",
            "base_target",
            "before",
        ],
    ),
    (
        "frame",
        &["function", "symbol", "frame_name", "func", "method"],
    ),
    ("thread", &["thread_name", "tid", "thread_id"]),
    ("process", &["pid", "process_name", "process_id"]),
    (
        "limit",
        &[
            "max",
            "max_rows",
            "top",
            "n",
            "count",
            "page_size",
            "top_n",
            "rows",
        ],
    ),
    ("metric", &["metrics", "measure", "value"]),
];

/// The argument `name` means, when the tool has it.
fn by_meaning<'a>(name: &str, properties: &'a Map<String, Value>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    MEANINGS
        .iter()
        .find(|(_, aliases)| aliases.contains(&lower.as_str()))
        .and_then(|(canonical, _)| properties.get_key_value(*canonical))
        .map(|(k, _)| k.as_str())
}

/// Checks `args` against `schema` (an object schema with `properties`,
/// `required`, `additionalProperties: false`). Returns every problem at once;
/// when every unknown name has a meaning or spelling match, the error's
/// recovery is the same call with those names corrected.
pub fn check(tool: &str, schema: &Value, args: &Map<String, Value>) -> Result<(), FlameoxError> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut problems: Vec<Value> = Vec::new();
    let mut corrected = Map::new();
    let mut all_corrected = true;
    for (name, value) in args {
        match properties.get(name) {
            None => {
                let suggestion = by_meaning(name, properties).map(str::to_owned).or_else(|| {
                    closest(name, properties.keys().map(String::as_str), 1)
                        .into_iter()
                        .next()
                        .filter(|c| near_spelling(name, c))
                });
                match &suggestion {
                    Some(s) if !args.contains_key(s) => {
                        corrected.insert(s.clone(), value.clone());
                    }
                    _ => all_corrected = false,
                }
                problems.push(json!({
                    "field": name,
                    "problem": match &suggestion {
                        Some(s) => format!("unknown field; did you mean `{s}`?"),
                        None => "unknown field".to_owned(),
                    },
                    "closest": suggestion,
                    "valid": properties.keys().collect::<Vec<_>>(),
                }));
            }
            Some(rule) => {
                if let Some(problem) = check_value(rule, value) {
                    problems.push(json!({ "field": name, "problem": problem }));
                    all_corrected = false;
                } else {
                    corrected.insert(name.clone(), value.clone());
                }
            }
        }
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = required.as_str()
            && !args.contains_key(name)
            && !corrected.contains_key(name)
        {
            problems.push(json!({ "field": name, "problem": "required" }));
            all_corrected = false;
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let summary: Vec<String> = problems
        .iter()
        .map(|p| {
            format!(
                "{}: {}",
                p["field"].as_str().unwrap_or("?"),
                p["problem"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let mut error = FlameoxError::new(ErrorCode::InvalidArguments, summary.join("; "));
    // What each refused argument holds, in the schema's own words.
    for p in &problems {
        let field = p["field"].as_str().unwrap_or_default();
        if let Some(description) = properties
            .get(field)
            .and_then(|rule| rule["description"].as_str())
        {
            error = error.remedy(format!("{field}: {description}"));
        }
    }
    let error = error.detail("fields", problems);
    Err(if all_corrected {
        let command = format!("the same call with {}", Value::Object(corrected.clone()));
        error.recover_with(tool, Value::Object(corrected), command)
    } else {
        error
    })
}

fn check_value(rule: &Value, value: &Value) -> Option<String> {
    let kind = rule.get("type").and_then(Value::as_str).unwrap_or("any");
    let ok_type = match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    if !ok_type {
        return Some(format!("must be a {kind}"));
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as u64;
        if let Some(max) = rule.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            return Some(format!("longer than {max} characters"));
        }
        if let Some(min) = rule.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            return Some(if min <= 1 {
                "must not be empty".into()
            } else {
                format!("shorter than {min} characters")
            });
        }
        if let Some(allowed) = rule.get("enum").and_then(Value::as_array)
            && !allowed.iter().any(|a| a == value)
        {
            return Some(format!("must be one of {}", Value::Array(allowed.clone())));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = rule.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Some(format!("must be ≥ {}", rule["minimum"]));
        }
        if let Some(max) = rule.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Some(format!("must be ≤ {}", rule["maximum"]));
        }
    }
    if let Some(entries) = value.as_object() {
        if let Some(max) = rule.get("maxProperties").and_then(Value::as_u64)
            && entries.len() as u64 > max
        {
            return Some(format!("has more than {max} entries"));
        }
        if let Some(entry_rule) = rule.get("additionalProperties").filter(|r| r.is_object()) {
            for (key, entry) in entries {
                if let Some(problem) = check_value(entry_rule, entry) {
                    return Some(format!("entry {key} {problem}"));
                }
            }
        }
    }
    if let Some(items) = value.as_array() {
        let count = items.len() as u64;
        if let Some(min) = rule.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            return Some(format!("needs at least {min} items"));
        }
        if let Some(max) = rule.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            return Some(format!("has more than {max} items"));
        }
        if let Some(item_rule) = rule.get("items") {
            for (i, item) in items.iter().enumerate() {
                if let Some(problem) = check_value(item_rule, item) {
                    return Some(format!("item {i} {problem}"));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_meaning_get_the_corrected_call_as_recovery() {
        let schema = json!({
            "type": "object",
            "properties": { "target": {"type": "string"}, "base": {"type": "string"}, "limit": {"type": "integer"} },
            "required": ["target"],
            "additionalProperties": false
        });
        let args = json!({ "run_id": "r1", "baseline": "r0", "limit": 5 })
            .as_object()
            .cloned()
            .unwrap();
        let err = check("compare_hotspots", &schema, &args).unwrap_err();
        let fields = err.details["fields"].as_array().unwrap();
        assert!(
            fields
                .iter()
                .any(|f| f["field"] == "run_id" && f["closest"] == "target")
        );
        assert!(
            fields
                .iter()
                .any(|f| f["field"] == "baseline" && f["closest"] == "base")
        );
        assert!(
            !fields.iter().any(|f| f["problem"] == "required"),
            "{fields:?}"
        );
        let recovery = err.recovery.as_ref().unwrap();
        assert_eq!(recovery.next_tool, "compare_hotspots");
        assert_eq!(
            recovery.next_arguments,
            json!({ "target": "r1", "base": "r0", "limit": 5 })
        );
        // A name with no meaning or spelling match leaves no recovery.
        let args = json!({ "target": "r1", "zzzzzzzz": 1 })
            .as_object()
            .cloned()
            .unwrap();
        assert!(check("t", &schema, &args).unwrap_err().recovery.is_none());
    }

    #[test]
    fn misspelled_unknown_missing_and_out_of_range_fields_are_all_reported() {
        let schema = json!({
            "type": "object",
            "properties": { "target": {"type": "string", "maxLength": 5}, "limit": {"type": "integer", "minimum": 1, "maximum": 1000} },
            "required": ["target"],
            "additionalProperties": false
        });
        let args = json!({ "limt": 5, "limit": 0 })
            .as_object()
            .cloned()
            .unwrap();
        let err = check("t", &schema, &args).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        let fields = err.details["fields"].as_array().unwrap();
        assert_eq!(fields.len(), 3);
        assert!(
            fields
                .iter()
                .any(|f| f["field"] == "limt" && f["closest"] == "limit")
        );
        assert!(
            fields
                .iter()
                .any(|f| f["field"] == "limit" && f["problem"] == "must be ≥ 1")
        );
        assert!(
            fields
                .iter()
                .any(|f| f["field"] == "target" && f["problem"] == "required")
        );
        let ok = json!({ "target": "abc" }).as_object().cloned().unwrap();
        assert!(check("t", &schema, &ok).is_ok());
        let long = json!({ "target": "abcdef" }).as_object().cloned().unwrap();
        assert!(check("t", &schema, &long).is_err());
    }

    #[test]
    fn numbers_and_arrays_are_bounded() {
        let schema = json!({
            "type": "object",
            "properties": {
                "below": { "type": "number", "minimum": 0, "maximum": 1 },
                "targets": { "type": "array", "minItems": 1, "maxItems": 2, "items": { "type": "string", "maxLength": 3 } }
            },
            "required": [],
            "additionalProperties": false
        });
        let ok = json!({ "below": 0.5, "targets": ["a", "bcd"] });
        assert!(check("t", &schema, ok.as_object().unwrap()).is_ok());
        for bad in [
            json!({ "below": 1.5 }),
            json!({ "below": "half" }),
            json!({ "targets": [] }),
            json!({ "targets": ["a", "b", "c"] }),
            json!({ "targets": ["abcd"] }),
            json!({ "targets": [7] }),
        ] {
            assert!(
                check("t", &schema, bad.as_object().unwrap()).is_err(),
                "{bad}"
            );
        }
    }
}
