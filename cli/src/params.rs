//! The `--param NAME=VALUE` parser of every object argument on the command
//! line (`import --param`, `capture run --parameters`, a workload's
//! `--environment`); the engine checks the values.

use std::collections::BTreeMap;

use flameox_engine::FlameoxError;
use flameox_engine::error::Result;
use serde_json::{Map, Value};

/// `NAME=VALUE` pairs (or a JSON object) as an object. A value reads as
/// JSON (a number, a list, an object) unless `strings`; a repeated name is
/// refused.
pub(crate) fn parse_object(pairs: &[String], strings: bool) -> Result<Map<String, Value>> {
    let mut object = Map::new();
    for pair in pairs {
        if pair.trim_start().starts_with('{') {
            match serde_json::from_str::<Value>(pair) {
                Ok(Value::Object(map)) => {
                    object.extend(map);
                    continue;
                }
                _ => {
                    return Err(FlameoxError::invalid_argument(
                        "parameters",
                        format!("`{pair}` is not a JSON object"),
                    ));
                }
            }
        }
        for (key, text) in parse_params(std::slice::from_ref(pair))? {
            let value = match serde_json::from_str::<Value>(&text) {
                Ok(v) if !strings && !v.is_string() => v,
                _ => Value::String(text),
            };
            if object.insert(key.clone(), value).is_some() {
                return Err(FlameoxError::invalid_argument(
                    "param",
                    format!("parameter {key} is given twice"),
                ));
            }
        }
    }
    Ok(object)
}

/// `--param n=1024 --param mode=fast` → `{mode: fast, n: 1024}`; a
/// missing `=` or a repeated name is refused.
pub(crate) fn parse_params(params: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for text in params {
        let Some((name, value)) = text.split_once('=') else {
            return Err(FlameoxError::invalid_argument(
                "param",
                format!("{text:?} is not NAME=VALUE"),
            ));
        };
        if out.insert(name.to_owned(), value.to_owned()).is_some() {
            return Err(FlameoxError::invalid_argument(
                "param",
                format!("parameter {name} is given twice"),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_parse_and_bad_ones_are_refused() {
        let parsed = parse_params(&["n=1024".into(), "expr=a=b".into()]).unwrap();
        assert_eq!(parsed["n"], "1024");
        assert_eq!(parsed["expr"], "a=b");
        assert!(parse_params(&["n".into()]).is_err());
        assert!(parse_params(&["n=1".into(), "n=2".into()]).is_err());
    }
}
