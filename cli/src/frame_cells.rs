//! How a frame reads in a table: its short key (the `frame` column, which
//! every frame argument accepts), its function, and where it lives — the
//! file and line from the frame's columns or, for trace slices, from its
//! name (`fib (/tmp/w.py:3)`), else its module.

use flameox_recipes::frame_identity::split_name;
use serde_json::Value;

/// How many characters of a frame key a table shows.
pub(crate) const SHORT_KEY: usize = 8;

/// The first [`SHORT_KEY`] characters of a frame key.
pub(crate) fn short_key(key: &str) -> String {
    key.chars().take(SHORT_KEY).collect()
}

/// The function of a frame's name.
pub(crate) fn function(name: &str) -> String {
    split_name(name).function.to_owned()
}

/// `file:line`, the file, or the module of a frame row (`function`,
/// `file`, `line`, `module` fields).
pub(crate) fn location(row: &Value) -> String {
    place(
        row["function"].as_str().unwrap_or_default(),
        row["file"].as_str(),
        row["line"].as_i64(),
        row["module"].as_str(),
    )
}

/// [`location`] from the row's parts.
pub(crate) fn place(
    name: &str,
    file: Option<&str>,
    line: Option<i64>,
    module: Option<&str>,
) -> String {
    let parts = split_name(name);
    match (file.or(parts.file), line.or(parts.line)) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        (Some(f), None) => f.to_owned(),
        _ => module.unwrap_or_default().to_owned(),
    }
}

/// One frame's cells in a custom view's table.
pub(crate) struct FrameRow {
    key: String,
    function: String,
    location: String,
    category: String,
}

/// A row of an answer that names a frame (hotspots, frame deltas).
pub(crate) trait FrameFields {
    /// (key, name, file, line, module, category)
    #[allow(clippy::type_complexity)]
    fn frame_fields(
        &self,
    ) -> (
        &str,
        &str,
        &Option<String>,
        Option<i64>,
        &Option<String>,
        &Option<String>,
    );
}

macro_rules! frame_fields {
    ($($row:ty),*) => {$(
        impl FrameFields for $row {
            fn frame_fields(&self) -> (&str, &str, &Option<String>, Option<i64>, &Option<String>, &Option<String>) {
                (&self.frame, &self.function, &self.file, self.line, &self.module, &self.category)
            }
        }
    )*};
}

frame_fields!(
    flameox_recipes::hotspots::HotspotRow,
    flameox_recipes::frame_deltas::FrameDelta
);

impl FrameRow {
    /// The cells of an answer's frame row.
    pub(crate) fn of(row: &impl FrameFields) -> FrameRow {
        let (key, name, file, line, module, category) = row.frame_fields();
        FrameRow::new(key, name, file, line, module, category)
    }

    pub(crate) fn new(
        key: &str,
        name: &str,
        file: &Option<String>,
        line: Option<i64>,
        module: &Option<String>,
        category: &Option<String>,
    ) -> FrameRow {
        FrameRow {
            key: short_key(key),
            function: function(name),
            location: place(name, file.as_deref(), line, module.as_deref()),
            category: category.clone().unwrap_or_default(),
        }
    }
}

/// Which frame columns a table shows: `location` when some frame has one,
/// `category` when the frames' categories differ (viztracer's `fee` on
/// every row says nothing).
pub(crate) struct FrameColumns {
    location: bool,
    category: bool,
}

impl FrameColumns {
    pub(crate) fn of(rows: &[FrameRow]) -> FrameColumns {
        let categories: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r.category.as_str()).collect();
        FrameColumns {
            location: rows.iter().any(|r| !r.location.is_empty()),
            category: categories.len() > 1,
        }
    }

    /// A table of `measures` (right-aligned; `optional` ones left out on a
    /// narrow terminal) then the frame columns, whose function and location
    /// give way to the terminal's width.
    pub(crate) fn table(&self, measures: &[&str], optional: &[usize]) -> crate::render::Table {
        let mut header: Vec<&str> = measures.to_vec();
        header.push("frame");
        let function = header.len();
        header.push("function");
        let mut paths = Vec::new();
        if self.location {
            paths.push(header.len());
            header.push("location");
        }
        if self.category {
            header.push("category");
        }
        let right: Vec<usize> = (0..measures.len()).collect();
        crate::render::Table::new(&header, &right)
            .shorten(&[function])
            .shorten_paths(&paths)
            .optional(optional)
    }

    /// Appends `frame`'s cells to a row of measures.
    pub(crate) fn push(&self, cells: &mut Vec<String>, frame: &FrameRow) {
        cells.push(frame.key.clone());
        cells.push(frame.function.clone());
        if self.location {
            cells.push(frame.location.clone());
        }
        if self.category {
            cells.push(frame.category.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_name_carries_its_location() {
        assert_eq!(function("fib (/tmp/w.py:3)"), "fib");
        assert_eq!(place("fib (/tmp/w.py:3)", None, None, None), "/tmp/w.py:3");
        assert_eq!(place("score", Some("s.py"), Some(12), None), "s.py:12");
        assert_eq!(place("aten::mm", None, None, Some("libtorch")), "libtorch");
        assert_eq!(short_key("d53afeb5f781bce336a36306eda44818"), "d53afeb5");
    }
}
