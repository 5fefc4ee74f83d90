//! A Gecko frame's location string → function, file, line, module.
//!
//! The Gecko profile has no function table: each frame names one string,
//! and its shape says what it is (the same heuristics the Firefox Profiler
//! applies when it processes a Gecko profile):
//! - `0x7fff5fbff8a0`: an unsymbolicated native address (module: the `libs`
//!   entry whose `[start, end)` holds it).
//! - `name (in libxul.so) + 123`, `name (in lib) (file:1:2)`, `name (in lib)`:
//!   a symbolicated native function in a library.
//! - `name (url:LINE)` / `name (url:LINE:COL)`, optionally followed by
//!   `[N]` (a source index): a JavaScript function. A url written as a
//!   loader chain `a.js -> b.js` is the last script, `b.js`.
//! - `url:LINE` (a url with `://`, or `self-hosted`): a script's top-level
//!   code, named `(root scope) url` as the Firefox Profiler names it.
//! - anything else: a label frame (`nsAppShell::ProcessGeckoEvents`,
//!   `js::RunScript`), kept whole as a native function.

/// What a location string says about its frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location<'a> {
    pub function: std::borrow::Cow<'a, str>,
    pub file: Option<&'a str>,
    pub line: Option<i64>,
    /// A library name (`(in lib)`), or `None` (filled from `libs` for addresses).
    pub module: Option<&'a str>,
    pub language: &'static str,
    /// An unsymbolicated address.
    pub address: Option<u64>,
}

/// Reads one location string.
pub(crate) fn parse_location(text: &str) -> Location<'_> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))
        && let Ok(address) = u64::from_str_radix(hex, 16)
    {
        return Location {
            function: text.into(),
            file: None,
            line: None,
            module: None,
            language: "native",
            address: Some(address),
        };
    }
    if let Some((function, lib)) = native_in_lib(text) {
        return Location {
            function: function.into(),
            file: None,
            line: None,
            module: Some(lib),
            language: "native",
            address: None,
        };
    }
    let body = strip_source_index(text);
    // `name (url:LINE[:COL])`
    if let Some(inner) = body.strip_suffix(')')
        && let Some(open) = inner.rfind(" (")
        && let Some((url, line)) = url_and_line(&inner[open + 2..])
    {
        return js(inner[..open].into(), url, line);
    }
    // `url:LINE[:COL]`: a script's top-level code.
    if let Some((url, line)) = url_and_line(body)
        && (url.contains("://") || url == "self-hosted")
    {
        return js(format!("(root scope) {url}").into(), url, line);
    }
    Location {
        function: text.into(),
        file: None,
        line: None,
        module: None,
        language: "native",
        address: None,
    }
}

fn js<'a>(function: std::borrow::Cow<'a, str>, url: &'a str, line: i64) -> Location<'a> {
    Location {
        function,
        file: Some(url),
        line: Some(line),
        module: None,
        language: "javascript",
        address: None,
    }
}

/// `name (in lib)`, `name (in lib) + 123`, `name (in lib) (…)`.
fn native_in_lib(text: &str) -> Option<(&str, &str)> {
    let open = text.find(" (in ")?;
    let rest = &text[open + 5..];
    let close = rest.find(')')?;
    let tail = rest[close + 1..].trim();
    let tail_ok = tail.is_empty()
        || tail
            .strip_prefix("+ ")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        || (tail.starts_with('(') && tail.ends_with(')'));
    let lib = &rest[..close];
    (tail_ok && !lib.is_empty()).then_some((&text[..open], lib))
}

/// Drops a trailing `[N]` source index.
fn strip_source_index(text: &str) -> &str {
    if let Some(inner) = text.strip_suffix(']')
        && let Some(open) = inner.rfind('[')
        && open + 1 < inner.len()
        && inner[open + 1..].bytes().all(|b| b.is_ascii_digit())
    {
        return &inner[..open];
    }
    text
}

/// `url:LINE` or `url:LINE:COL` → (last url of a ` -> ` chain, LINE).
fn url_and_line(text: &str) -> Option<(&str, i64)> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (rest, last) = text.rsplit_once(':')?;
    if !digits(last) {
        return None;
    }
    let (url, line) = match rest.rsplit_once(':') {
        Some((url, line)) if digits(line) => (url, line),
        _ => (rest, last),
    };
    let url = url.rsplit(" -> ").next().unwrap_or(url).trim();
    let line = line.parse().ok()?;
    (!url.is_empty()).then_some((url, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(
        text: &str,
    ) -> (
        String,
        Option<&str>,
        Option<i64>,
        Option<&str>,
        &'static str,
    ) {
        let l = parse_location(text);
        (
            l.function.into_owned(),
            l.file,
            l.line,
            l.module,
            l.language,
        )
    }

    #[test]
    fn javascript_frames() {
        assert_eq!(
            parts("a (file:///Users/x/simple.js:1)"),
            (
                "a".into(),
                Some("file:///Users/x/simple.js"),
                Some(1),
                None,
                "javascript"
            )
        );
        assert_eq!(
            parts(
                "exports.makeInfallible/< (resource://devtools/shared/base-loader.js -> resource://devtools/shared/ThreadSafeDevToolsUtils.js:107)"
            ),
            (
                "exports.makeInfallible/<".into(),
                Some("resource://devtools/shared/ThreadSafeDevToolsUtils.js"),
                Some(107),
                None,
                "javascript"
            )
        );
        assert_eq!(
            parts("bound (self-hosted:962)"),
            (
                "bound".into(),
                Some("self-hosted"),
                Some(962),
                None,
                "javascript"
            )
        );
        assert_eq!(
            parts("f (http://localhost:8080/a.js:12:5)[3]"),
            (
                "f".into(),
                Some("http://localhost:8080/a.js"),
                Some(12),
                None,
                "javascript"
            )
        );
        assert_eq!(
            parts("get x (y) (https://h/a.js:7)").0,
            "get x (y)".to_string()
        );
        assert_eq!(
            parts("file:///Users/x/simple.js:30"),
            (
                "(root scope) file:///Users/x/simple.js".into(),
                Some("file:///Users/x/simple.js"),
                Some(30),
                None,
                "javascript"
            )
        );
    }

    #[test]
    fn native_and_label_frames() {
        let l = parse_location("0x7fff5fbff8a0");
        assert_eq!(l.address, Some(0x7fff5fbff8a0));
        assert_eq!(
            (l.function.as_ref(), l.language),
            ("0x7fff5fbff8a0", "native")
        );
        assert_eq!(
            parts("mozilla::Run (in XUL) + 120"),
            ("mozilla::Run".into(), None, None, Some("XUL"), "native")
        );
        assert_eq!(parts("f (in libxul.so) (a.cpp:1:2)").3, Some("libxul.so"));
        assert_eq!(parts("f (in libxul.so)").0, "f");
        for label in [
            "nsAppShell::ProcessGeckoEvents",
            "js::RunScript",
            "nsObserverService::NotifyObservers console-api-profiler",
            "(root)",
            "Navigation::DOMInteractive",
            "a:12",
            "0xzz",
            "",
            "x (in ) + 1",
            "f (no url)",
        ] {
            assert_eq!(
                parts(label),
                (label.into(), None, None, None, "native"),
                "{label}"
            );
        }
    }
}
