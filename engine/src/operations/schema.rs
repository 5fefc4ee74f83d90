//! An operation's input schema, generated from its request type (the same
//! type serde decodes) and flattened into the strict shape both transports
//! read: one object, scalar properties with their limits and help text,
//! `required`, and no additional properties.

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

/// The strict object schema of `T`.
pub fn input_schema<T: JsonSchema>() -> Value {
    let root = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    let defs = root.get("$defs").cloned().unwrap_or(Value::Null);
    let mut properties = Map::new();
    if let Some(props) = root.get("properties").and_then(Value::as_object) {
        for (name, rule) in props {
            properties.insert(name.clone(), flatten(rule, &defs));
        }
    }
    let required = root.get("required").cloned().unwrap_or_else(|| json!([]));
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// One property: references resolved, `null` alternatives dropped (an
/// absent optional argument is how null is said), enums as `enum`.
fn flatten(rule: &Value, defs: &Value) -> Value {
    let mut rule = rule.clone();
    let description = rule.get("description").cloned();
    if let Some(reference) = rule.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or_default();
        rule = defs.get(name).cloned().unwrap_or(Value::Null);
    }
    for key in ["anyOf", "oneOf"] {
        let Some(options) = rule.get(key).and_then(Value::as_array).cloned() else {
            continue;
        };
        let options: Vec<Value> = options
            .into_iter()
            .filter(|o| o.get("type") != Some(&json!("null")))
            .collect();
        let consts: Vec<Value> = options
            .iter()
            .filter_map(|o| {
                o.get("const")
                    .or_else(|| o.get("enum").and_then(|e| e.get(0)))
            })
            .cloned()
            .collect();
        rule = if consts.len() == options.len() && !consts.is_empty() {
            json!({ "type": "string", "enum": consts })
        } else if options.len() == 1 {
            flatten(&options[0], defs)
        } else if let Some(merged) = merge_types(&options, defs) {
            merged
        } else {
            rule
        };
    }
    // A list's items resolved the same way (no reference left dangling:
    // the strict schema carries no `$defs`).
    if let Some(items) = rule.get("items").cloned() {
        rule["items"] = flatten(&items, defs);
    }
    if let Some(types) = rule.get("type").and_then(Value::as_array).cloned() {
        let kept: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        if kept.len() == 1 {
            rule["type"] = kept[0].clone();
        }
    }
    if let Some(object) = rule.as_object_mut() {
        object.remove("format");
        object.remove("title");
        object.remove("$schema");
        object.remove("default");
        // Any value is what an object without a rule on its values means.
        if object.get("additionalProperties") == Some(&Value::Bool(true)) {
            object.remove("additionalProperties");
        }
        if let Some(values) = object.get_mut("enum").and_then(Value::as_array_mut) {
            values.retain(|v| !v.is_null());
        }
        if let Some(d) = description {
            object.insert("description".into(), d);
        }
    }
    rule
}

/// Alternatives of different plain types (a string or a list of strings)
/// as one rule with a type list, which clients and the terminal read.
fn merge_types(options: &[Value], defs: &Value) -> Option<Value> {
    let mut merged = Map::new();
    let mut types = Vec::new();
    for option in options {
        let option = flatten(option, defs);
        let object = option.as_object()?;
        let ty = object.get("type")?.as_str()?.to_owned();
        if types.contains(&Value::from(ty.clone())) {
            return None;
        }
        types.push(Value::from(ty));
        for (key, value) in object {
            if key != "type" {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    merged.insert("type".into(), Value::Array(types));
    Some(Value::Object(merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// How a thing is ordered.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Order {
        /// First.
        Longest,
        /// Second.
        Earliest,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Request {
        /// The target.
        #[schemars(length(min = 1, max = 200))]
        target: String,
        /// How many.
        #[schemars(range(min = 1, max = 1000))]
        limit: Option<usize>,
        /// The order.
        order: Option<Order>,
        /// A start.
        start_ns: Option<i64>,
        /// A switch.
        relative: Option<bool>,
    }

    #[test]
    fn optional_scalars_enums_and_limits_flatten_to_the_strict_shape() {
        let s = input_schema::<Request>();
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], json!(["target"]));
        let p = &s["properties"];
        assert_eq!(
            p["target"],
            json!({"type": "string", "minLength": 1, "maxLength": 200, "description": "The target."})
        );
        assert_eq!(p["limit"]["type"], "integer");
        assert_eq!(p["limit"]["minimum"], 1);
        assert_eq!(p["limit"]["maximum"], 1000);
        assert_eq!(
            p["order"],
            json!({"type": "string", "enum": ["longest", "earliest"], "description": "The order."})
        );
        assert_eq!(p["start_ns"]["type"], "integer");
        assert_eq!(p["relative"]["type"], "boolean");
        assert!(p["relative"].get("format").is_none());
    }
}
