//! The byte budget of a default answer. An agent pays for every byte it
//! reads; a ranked list whose default page (20 rows of long C++ kernel
//! names, say) runs past the budget is cut to the rows that fit, by asking
//! the operation again with that `limit`, so the page's `next_cursor`
//! continues exactly where it stops. The answer says what it cut. A caller
//! who names `limit` gets what it asked for.

use serde_json::{Value, json};

/// Bytes of compact JSON one default answer may take.
pub const ANSWER_BUDGET: usize = 6 * 1024;

/// Room kept for what a cut page adds: its cursor and the note below.
const CUT_ALLOWANCE: usize = 512;

fn compact(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.len())
}

/// How many leading rows fit the budget, when the answer is over it and
/// fewer rows would help (at least one row is always kept).
pub(super) fn rows_that_fit(result: &Value, rows: &str) -> Option<usize> {
    let size = compact(result);
    if size <= ANSWER_BUDGET {
        return None;
    }
    let list = result.get(rows)?.as_array()?;
    if list.len() <= 1 {
        return None;
    }
    let sizes: Vec<usize> = list.iter().map(|r| compact(r) + 1).collect();
    let fixed = size.saturating_sub(sizes.iter().sum::<usize>());
    let room = ANSWER_BUDGET.saturating_sub(CUT_ALLOWANCE);
    let mut used = fixed;
    let mut fit = 0;
    for s in sizes {
        if used + s > room {
            break;
        }
        used += s;
        fit += 1;
    }
    Some(fit.max(1)).filter(|f| *f < list.len())
}

/// Says on the answer that it was cut to fit, and how to read on: the
/// page's cursor when the operation pages, else a larger `limit`.
pub(super) fn mark_cut(result: &mut Value, rows: &str, fit: usize, pages: bool) {
    let rest = if pages {
        "next_cursor continues; or pass limit for a longer page"
    } else {
        "pass limit (e.g. 20) for more"
    };
    if let Value::Object(map) = result {
        map.insert(
            "budget".into(),
            json!({
                "bytes": ANSWER_BUDGET,
                "note": format!(
                    "{fit} {rows} fit the {} KB answer budget; {rest}",
                    ANSWER_BUDGET / 1024
                ),
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(rows: usize, width: usize) -> Value {
        let row = json!({ "name": "x".repeat(width) });
        json!({ "unit": "ns", "rows": vec![row; rows] })
    }

    #[test]
    fn a_small_answer_is_left_alone_and_a_large_one_keeps_what_fits() {
        assert_eq!(rows_that_fit(&answer(20, 100), "rows"), None);
        let fit = rows_that_fit(&answer(20, 600), "rows").expect("cut");
        assert!((8..20).contains(&fit), "{fit}");
        let mut cut = answer(fit, 600);
        mark_cut(&mut cut, "rows", fit, true);
        assert!(compact(&cut) <= ANSWER_BUDGET, "{}", compact(&cut));
        // One huge row is still one row: the answer is never empty.
        assert_eq!(rows_that_fit(&answer(3, 10_000), "rows"), Some(1));
        assert_eq!(rows_that_fit(&answer(1, 10_000), "rows"), None);
    }
}
