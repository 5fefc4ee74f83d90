//! Terminal rendering: aligned tables, humanized units, truncation footers.
//! Presentation only; every number comes from the engine's result models.

use std::fmt::Write;

pub use flameox_engine::units::duration_ns;
use flameox_engine::units::sig3;

/// `1.2 KiB`, `12.4 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{} {}", sig3(v), UNITS[unit])
    }
}

/// A value in its metric's unit.
pub fn value(v: i64, unit: &str) -> String {
    match unit {
        "ns" => duration_ns(v),
        "bytes" => bytes(v.max(0) as u64),
        _ => thousands(v),
    }
}

/// `1,234,567`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// Cuts a cell to `max` characters with an ellipsis.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// A table with a header; columns listed in `right` are right-aligned.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    right: Vec<usize>,
}

impl Table {
    pub fn new(header: &[&str], right: &[usize]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            right: right.to_vec(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut parts = Vec::new();
            for (i, cell) in cells.iter().enumerate().take(cols) {
                let pad = widths[i].saturating_sub(cell.chars().count());
                if self.right.contains(&i) {
                    parts.push(format!("{}{cell}", " ".repeat(pad)));
                } else if i + 1 == cols {
                    parts.push(cell.clone());
                } else {
                    parts.push(format!("{cell}{}", " ".repeat(pad)));
                }
            }
            let _ = writeln!(out, "{}", parts.join("  ").trim_end());
        };
        line(&self.header, &mut out);
        for row in &self.rows {
            line(row, &mut out);
        }
        out
    }
}

/// `showing 20 of 1,234 — next: <command>`.
pub fn footer(returned: usize, total: u64, next: Option<String>) -> String {
    match next {
        Some(cmd) => format!(
            "showing {} of {} — next: {cmd}",
            thousands(returned as i64),
            thousands(total as i64)
        ),
        None => format!(
            "showing {} of {}",
            thousands(returned as i64),
            thousands(total as i64)
        ),
    }
}

/// An operation's typed result, read back from its JSON.
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    result: &serde_json::Value,
) -> flameox_engine::error::Result<T> {
    serde_json::from_value::<T>(result.clone()).map_err(|e| {
        flameox_engine::FlameoxError::internal(format!("reading the answer back: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_humanized() {
        assert_eq!(duration_ns(1_530_000), "1.53 ms");
        assert_eq!(duration_ns(999), "999 ns");
        assert_eq!(duration_ns(2_100_000_000), "2.10 s");
        assert_eq!(
            bytes(12 * 1024 * 1024 * 1024 + 400 * 1024 * 1024),
            "12.4 GiB"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(cut("abcdef", 4), "abc…");
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["name", "n"], &[1]);
        t.row(vec!["a".into(), "10".into()]);
        t.row(vec!["bbb".into(), "2".into()]);
        assert_eq!(t.render(), "name   n\na     10\nbbb    2\n");
    }
}
