//! The `--param NAME=VALUE` parser of `flameox import` and `runs freeze`
//! (the engine's `import_plan::check_run_labels` checks the values).

use std::collections::BTreeMap;

use flameox_engine::FlameoxError;
use flameox_engine::error::Result;

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
