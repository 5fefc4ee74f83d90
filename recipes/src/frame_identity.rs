//! Frame identity that survives edits. Two runs of one program are compared
//! frame by frame, and a frame is its *function* and the *name of its file*
//! (or its module, or a slice's category) — not its line: a function moved
//! two lines down is the same function, and per-line frames of a sampled
//! profile (`score` at lines 12, 15 and 19) are one function. Same-named
//! functions of different files stay apart; a function whose file was
//! renamed is matched by its name alone when that name is unique on both
//! sides, and the answer says it was.
//!
//! Producers put the location in different places: sampled frames carry
//! `file` and `line` columns; trace slices carry it in their name —
//! `fib (/tmp/w.py:3)` (viztracer), `w.py(3): fib` (Kineto's
//! `python_function`) — so the name is split first ([`split_name`]).

/// A frame's name split into function, file and line where the name
/// carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameParts<'a> {
    pub function: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<i64>,
}

/// `w.py(3): fib` and `fib (/tmp/w.py:3)` → (`fib`, the file, 3); any other
/// name is its own function.
pub fn split_name(name: &str) -> NameParts<'_> {
    let name = name.trim();
    // Kineto python_function: `path(line): function`.
    if let Some(at) = name.find("): ") {
        let head = &name[..at];
        if let Some(open) = head.rfind('(')
            && open > 0
            && let Ok(line) = head[open + 1..].parse::<i64>()
        {
            return NameParts {
                function: name[at + 3..].trim(),
                file: Some(&head[..open]),
                line: Some(line),
            };
        }
    }
    // viztracer / py-spy: `function (path:line)` or `function (path)`.
    if name.ends_with(')')
        && let Some(open) = name.rfind(" (")
    {
        let inside = &name[open + 2..name.len() - 1];
        if inside.contains('/') || inside.contains('\\') || inside.contains(".py") {
            let (file, line) = match inside.rsplit_once(':') {
                Some((file, line)) => match line.parse::<i64>() {
                    Ok(line) => (file, Some(line)),
                    Err(_) => (inside, None),
                },
                None => (inside, None),
            };
            return NameParts {
                function: name[..open].trim(),
                file: Some(file),
                line,
            };
        }
    }
    NameParts {
        function: name,
        file: None,
        line: None,
    }
}

/// The last part of a path (`/a/b/w.py` → `w.py`).
pub fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// What a frame is matched by: its function and where it lives (a file's
/// name, else a module, else a slice's category), and its line only when
/// asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameIdentity {
    pub function: String,
    pub place: Option<String>,
    pub line: Option<i64>,
}

/// The identity of a frame from its columns.
pub fn identity(
    function: &str,
    file: Option<&str>,
    line: Option<i64>,
    module: Option<&str>,
    category: Option<&str>,
    by_line: bool,
) -> FrameIdentity {
    let parts = split_name(function);
    let file = file.or(parts.file);
    let line = line.or(parts.line);
    let place = file
        .map(file_name)
        .or(module)
        .or(category)
        .map(str::to_owned);
    FrameIdentity {
        function: parts.function.to_owned(),
        place,
        line: if by_line { line } else { None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_in_each_producers_spelling() {
        assert_eq!(
            split_name("fib (/tmp/tr/before/workload.py:3)"),
            NameParts {
                function: "fib",
                file: Some("/tmp/tr/before/workload.py"),
                line: Some(3)
            }
        );
        assert_eq!(
            split_name("threading.py(359): wait"),
            NameParts {
                function: "wait",
                file: Some("threading.py"),
                line: Some(359)
            }
        );
        assert_eq!(split_name("aten::mm").function, "aten::mm");
        assert_eq!(split_name("f (x)").function, "f (x)");
        assert_eq!(split_name("g (/a/b.py)").file, Some("/a/b.py"));
    }

    #[test]
    fn a_moved_function_keeps_its_identity_and_files_stay_apart() {
        let before = identity("fib (/a/w.py:3)", None, None, None, Some("fee"), false);
        let after = identity("fib (/b/w.py:5)", None, None, None, Some("fee"), false);
        assert_eq!(before, after);
        let other = identity("fib (/a/v.py:3)", None, None, None, None, false);
        assert_ne!(before, other);
        // Per line when asked.
        let a = identity("score", Some("/x/m.py"), Some(12), None, None, true);
        let b = identity("score", Some("/x/m.py"), Some(15), None, None, true);
        assert_ne!(a, b);
        let a = identity("score", Some("/x/m.py"), Some(12), None, None, false);
        assert_eq!(a.place.as_deref(), Some("m.py"));
    }
}
