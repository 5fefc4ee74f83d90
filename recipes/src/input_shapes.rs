//! Operator input shapes: torch.profiler records `"Input Dims": [[…], …]`
//! in each operator's args when `record_shapes=True`. A scalar UDF pulls
//! that array out of `args_json` so the grouping by (operator, shapes)
//! stays a DataFusion aggregate — streamed, with memory bounded by the
//! distinct shapes, not the calls.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use memchr::memmem;

use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::DataFrame;
use serde::{Deserialize, Serialize};

use crate::common::{RecipeResult, collect, column, i64_at, string_at};

/// The key Kineto writes the shapes under.
const INPUT_DIMS_KEY: &str = "\"Input Dims\"";
/// Longest shape text kept; longer ones end with `…`.
const MAX_SHAPE_CHARS: usize = 240;
/// Shapes reported per operator.
pub const SHAPES_PER_OPERATOR: usize = 3;

/// One operator called with one set of input shapes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeRow {
    /// The `Input Dims` array without whitespace, e.g. `[[64,3,224,224],[64]]`.
    pub shapes: String,
    pub count: i64,
    pub total_ns: i64,
}

/// The `Input Dims` array of one args object, whitespace removed; `None`
/// when absent or malformed (unbalanced brackets).
pub fn input_dims(args_json: &str) -> Option<String> {
    // One searcher for every row: `str::find` builds a new one per call
    // (a fifth of `analyze pytorch` at 10 M events).
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(INPUT_DIMS_KEY.as_bytes()));
    let at = FINDER.find(args_json.as_bytes())? + INPUT_DIMS_KEY.len();
    let rest = args_json[at..].trim_start().strip_prefix(':')?.trim_start();
    if !rest.starts_with('[') {
        return None;
    }
    let mut depth = 0usize;
    let mut out = String::new();
    let mut truncated = false;
    for c in rest.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.checked_sub(1)?,
            c if c.is_whitespace() => continue,
            _ => {}
        }
        if out.len() < MAX_SHAPE_CHARS {
            out.push(c);
        } else {
            truncated = true;
        }
        if depth == 0 {
            if truncated {
                out.push('…');
            }
            return Some(out);
        }
    }
    None
}

/// `flameox_input_dims(args_json)` as an expression.
fn input_dims_expr(args: Expr) -> Expr {
    crate::text_udf::text_udf("flameox_input_dims", input_dims, args)
}

/// The `flameox_input_dims` UDF itself.
pub fn input_dims_udf() -> datafusion::logical_expr::ScalarUDF {
    crate::text_udf::text_udf_function("flameox_input_dims", input_dims)
}

/// Per operator of `names`, its heaviest input shapes (by total time, then
/// count, then text). `ops` has `name`, `dur_ns` and `args_json` columns.
pub async fn top_shapes(
    ops: DataFrame,
    names: &[String],
) -> RecipeResult<BTreeMap<String, Vec<ShapeRow>>> {
    let mut by_operator: BTreeMap<String, Vec<ShapeRow>> = BTreeMap::new();
    if names.is_empty() {
        return Ok(by_operator);
    }
    let wanted: Vec<Expr> = names.iter().map(|n| lit(n.as_str())).collect();
    let grouped = ops
        .filter(col("name").in_list(wanted, false))?
        .select(vec![
            col("name"),
            col("dur_ns"),
            input_dims_expr(col("args_json")).alias("shapes"),
        ])?
        .filter(col("shapes").is_not_null())?
        .aggregate(
            vec![col("name"), col("shapes")],
            vec![
                count(lit(1)).alias("count"),
                sum(col("dur_ns")).alias("total_ns"),
            ],
        )?;
    for batch in collect(grouped).await? {
        for i in 0..batch.num_rows() {
            let name = string_at(column(&batch, "name")?, i).unwrap_or_default();
            by_operator.entry(name).or_default().push(ShapeRow {
                shapes: string_at(column(&batch, "shapes")?, i).unwrap_or_default(),
                count: i64_at(column(&batch, "count")?, i).unwrap_or(0),
                total_ns: i64_at(column(&batch, "total_ns")?, i).unwrap_or(0),
            });
        }
    }
    for rows in by_operator.values_mut() {
        rows.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| b.count.cmp(&a.count))
                .then_with(|| a.shapes.cmp(&b.shapes))
        });
        rows.truncate(SHAPES_PER_OPERATOR);
    }
    Ok(by_operator)
}

#[cfg(test)]
mod tests {
    use super::input_dims;

    #[test]
    fn shapes_are_cut_out_balanced_and_without_whitespace() {
        let args = r#"{"External id": 7, "Input Dims": [[64, 3, 224, 224], [64], []], "Input type": ["float"]}"#;
        assert_eq!(
            input_dims(args).as_deref(),
            Some("[[64,3,224,224],[64],[]]")
        );
        assert_eq!(input_dims(r#"{"Input Dims": [[1, 2]"#), None);
        assert_eq!(input_dims(r#"{"Input Dims": 5}"#), None);
        assert_eq!(input_dims(r#"{"Sequence number": 5}"#), None);
        let long = format!(r#"{{"Input Dims": [{}]}}"#, vec!["[1]"; 200].join(","));
        let cut = input_dims(&long).unwrap_or_default();
        assert!(cut.ends_with('…') && cut.chars().count() <= 242, "{cut}");
    }
}
