//! Terminal rendering: aligned tables, humanized units, truncation footers.
//! Presentation only; every number comes from the engine's result models.

use std::fmt::Write;

pub use flameox_engine::units::{bytes, duration_ns};

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

/// Shortens `text` to `max` characters by removing its middle: the start
/// and, longer, the end stay (a path keeps its file name and line, a
/// qualified name its last parts).
pub fn shorten_middle(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_owned();
    }
    if max < 2 {
        return "…".chars().take(max).collect();
    }
    let head = (max - 1) / 3;
    let tail = max - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// The width tables fit: `COLUMNS` when set, else the terminal's when
/// standard output is one; `None` on a pipe (whole cells, for grep).
pub fn terminal_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
    {
        return Some(columns);
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_rows, columns)| usize::from(columns))
}

/// Shortens `text` to `max` characters from its start: a path keeps its
/// last folders, file name and line (`…/re/__init__.py:208`).
pub fn shorten_start(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_owned();
    }
    let kept = max.saturating_sub(1);
    std::iter::once('…')
        .take(max.min(1))
        .chain(chars[chars.len() - kept..].iter().copied())
        .collect()
}

/// The narrowest a shortened column gets (its header is never cut).
const MIN_SHORTENED: usize = 12;
/// How narrow shortened columns get before optional columns are left out.
const COMFORTABLE: usize = 24;

/// How a column gives way to the terminal's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Give {
    /// Shortened in the middle (names).
    Middle,
    /// Shortened from the start (paths: the file and line stay).
    Start,
    /// Left out when the table would otherwise squeeze its names.
    Drop,
}

/// A table with a header; columns listed in `right` are right-aligned.
/// Some columns give way when the table is wider than the terminal:
/// names and paths are shortened, optional columns left out.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    right: Vec<usize>,
    give: Vec<(usize, Give)>,
}

impl Table {
    pub fn new(header: &[&str], right: &[usize]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            right: right.to_vec(),
            give: Vec::new(),
        }
    }

    /// Columns of names, shortened in the middle to fit.
    pub fn shorten(mut self, columns: &[usize]) -> Table {
        self.give.extend(columns.iter().map(|&c| (c, Give::Middle)));
        self
    }

    /// Columns of paths, shortened from their start to fit.
    pub fn shorten_paths(mut self, columns: &[usize]) -> Table {
        self.give.extend(columns.iter().map(|&c| (c, Give::Start)));
        self
    }

    /// Columns left out, in this order, before names are squeezed below
    /// a comfortable width.
    pub fn optional(mut self, columns: &[usize]) -> Table {
        self.give.extend(columns.iter().map(|&c| (c, Give::Drop)));
        self
    }

    fn gives(&self, column: usize) -> Option<Give> {
        self.give
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, g)| *g)
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// No rows: a caller prints its summary alone.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Fitted to [`terminal_width`].
    pub fn render(&self) -> String {
        self.render_to(terminal_width())
    }

    /// Fitted to `width` characters (`None`: whole cells).
    pub fn render_to(&self, width: Option<usize>) -> String {
        let cols = self.header.len();
        let mut widths: Vec<Option<usize>> = self
            .header
            .iter()
            .map(|h| Some(h.chars().count()))
            .collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(Some(cell.chars().count()));
            }
        }
        if let Some(width) = width {
            self.fit(&mut widths, width);
        }
        let shown: Vec<usize> = (0..cols).filter(|&i| widths[i].is_some()).collect();
        let last = shown.last().copied();
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut parts = Vec::new();
            for &i in &shown {
                let Some(cell) = cells.get(i) else { continue };
                let w = widths[i].unwrap_or_default();
                let cell = match self.gives(i) {
                    Some(Give::Middle) => shorten_middle(cell, w),
                    Some(Give::Start) => shorten_start(cell, w),
                    _ => cell.clone(),
                };
                let pad = w.saturating_sub(cell.chars().count());
                if self.right.contains(&i) {
                    parts.push(format!("{}{cell}", " ".repeat(pad)));
                } else if Some(i) == last {
                    parts.push(cell);
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

    /// Narrows the shortened columns, widest first, to a comfortable
    /// width; then leaves out optional columns; then narrows further, to
    /// each column's minimum.
    fn fit(&self, widths: &mut [Option<usize>], width: usize) {
        let total = |w: &[Option<usize>]| {
            let shown: Vec<usize> = w.iter().flatten().copied().collect();
            shown.iter().sum::<usize>() + 2 * shown.len().saturating_sub(1)
        };
        let narrow = |widths: &mut [Option<usize>], least: usize| {
            while total(widths) > width {
                let widest = self
                    .give
                    .iter()
                    .filter(|(_, g)| *g != Give::Drop)
                    .map(|(i, _)| *i)
                    .filter_map(|i| {
                        let floor = least.max(self.header.get(i)?.chars().count());
                        widths
                            .get(i)
                            .copied()
                            .flatten()
                            .filter(|&w| w > floor)
                            .map(|w| (w, i))
                    })
                    .max_by_key(|&(w, i)| (w, std::cmp::Reverse(i)));
                match widest {
                    Some((_, i)) => widths[i] = widths[i].map(|w| w - 1),
                    None => break,
                }
            }
        };
        // As few optional columns out as keep the names comfortable.
        let optional: Vec<usize> = self
            .give
            .iter()
            .filter(|(_, g)| *g == Give::Drop)
            .map(|(i, _)| *i)
            .collect();
        let without = |count: usize| {
            let mut trial = widths.to_vec();
            for i in optional.iter().take(count) {
                if let Some(w) = trial.get_mut(*i) {
                    *w = None;
                }
            }
            trial
        };
        let mut dropped = 0;
        while dropped < optional.len() {
            let mut trial = without(dropped);
            narrow(&mut trial, COMFORTABLE);
            if total(&trial) <= width {
                break;
            }
            dropped += 1;
        }
        widths.copy_from_slice(&without(dropped));
        narrow(widths, MIN_SHORTENED);
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

/// Ends a table's footer: nothing more when the evidence is complete, else
/// what is missing (`evidence: partial (improper nesting)`).
pub fn evidence_line(status: &str, reason: &str) -> String {
    if status == "available" && reason == "complete" {
        "\n".to_owned()
    } else {
        format!("\nevidence: {status} ({})\n", reason.replace('_', " "))
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

/// `phase ProfilerStep#6: 4.43 ms, from 472 µs to 4.90 ms since the first
/// event` (trace ns when the import recorded no time span; `--json` keeps
/// the trace ns either way).
pub fn phase_line(p: &flameox_engine::services::phase_window::PhaseScope) -> String {
    let length = duration_ns(p.end_ns.saturating_sub(p.start_ns));
    match p.trace_start_ns {
        Some(first) => format!(
            "phase {}: {length}, from {} to {} since the first event\n",
            p.name,
            duration_ns(p.start_ns.saturating_sub(first)),
            duration_ns(p.end_ns.saturating_sub(first)),
        ),
        None => format!(
            "phase {}: {length}, from {} to {} ns (trace time)\n",
            p.name,
            thousands(p.start_ns),
            thousands(p.end_ns),
        ),
    }
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
    fn long_names_lose_their_middle_and_keep_file_and_line() {
        let path = "/root/.pyenv/versions/3.11.7/lib/python3.11/re/__init__.py:208";
        let short = shorten_middle(path, 30);
        assert_eq!(short.chars().count(), 30);
        assert!(short.starts_with("/root/.p") && short.ends_with("re/__init__.py:208"));
        assert_eq!(shorten_middle("fib", 30), "fib");
    }

    #[test]
    fn a_wide_table_fits_the_width_by_its_shortened_columns() {
        let mut t = Table::new(&["n", "name", "where"], &[0])
            .shorten(&[1])
            .shorten_paths(&[2]);
        t.row(vec!["1".into(), "a".repeat(40), "b".repeat(30)]);
        let fitted = t.render_to(Some(50));
        assert!(fitted.lines().all(|l| l.chars().count() <= 50), "{fitted}");
        assert!(t.render_to(None).contains(&"a".repeat(40)));
        // Never below a column's minimum, even when that overflows.
        let narrow = t.render_to(Some(10));
        assert!(narrow.lines().nth(1).is_some_and(|l| l.contains('…')));
        assert!(
            t.render_to(Some(50))
                .lines()
                .nth(1)
                .is_some_and(|l| l.ends_with("bbb"))
        );
    }

    #[test]
    fn optional_columns_go_before_names_are_squeezed() {
        let mut t = Table::new(&["a", "extra", "name"], &[0, 1])
            .shorten(&[2])
            .optional(&[1]);
        t.row(vec!["1".into(), "x".repeat(20), "n".repeat(30)]);
        let fitted = t.render_to(Some(40));
        assert!(
            !fitted.contains("extra") && fitted.contains(&"n".repeat(30)),
            "{fitted}"
        );
        assert!(t.render_to(Some(80)).contains("extra"));
        assert_eq!(shorten_start("/a/b/c.py:3", 8), "…/c.py:3");
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["name", "n"], &[1]);
        t.row(vec!["a".into(), "10".into()]);
        t.row(vec!["bbb".into(), "2".into()]);
        assert_eq!(t.render(), "name   n\na     10\nbbb    2\n");
    }

    #[test]
    fn a_phase_reads_in_time_since_the_first_event_when_the_trace_start_is_known() {
        let mut p = flameox_engine::services::phase_window::PhaseScope {
            name: "ProfilerStep#6".into(),
            start_ns: 1_000_472_000,
            end_ns: 1_004_900_000,
            trace_start_ns: Some(1_000_000_000),
        };
        assert_eq!(
            phase_line(&p),
            "phase ProfilerStep#6: 4.43 ms, from 472 µs to 4.90 ms since the first event\n"
        );
        p.trace_start_ns = None;
        assert_eq!(
            phase_line(&p),
            "phase ProfilerStep#6: 4.43 ms, from 1,000,472,000 to 1,004,900,000 ns (trace time)\n"
        );
    }
}
