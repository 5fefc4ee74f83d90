//! The Gecko profile as typed serde structs: the DevTools recording wrapper,
//! the profile (`meta`, `libs`, `threads`, `processes`), and its
//! `{schema, data}` tables.
//!
//! Tables are read row by row into [`Cell`]s (numbers, null, or "something
//! else"), never a `serde_json::Value` tree; columns are found later through
//! the table's `schema` (name → position), because `schema` may come after
//! `data` in the object. Markers, pages, counters and the other parts
//! flameox does not read are skipped unparsed by serde.

use std::collections::HashMap;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::json_doc::Decimal;

/// The whole document: a Firefox DevTools performance recording (`profile`
/// plus `label`, `duration`, `fileType`, …) or a bare Gecko profile (`meta`,
/// `threads`, …). Both shapes fit here; [`GeckoFile::into_profile`] picks.
#[derive(Debug, Deserialize)]
pub(crate) struct GeckoFile {
    #[serde(default)]
    pub profile: Option<Profile>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub duration: Option<Cell>,
    #[serde(rename = "fileType", default)]
    pub file_type: Option<String>,
    #[serde(default)]
    pub meta: Option<Meta>,
    #[serde(default)]
    pub libs: Option<Vec<Lib>>,
    #[serde(default)]
    pub threads: Option<Vec<Thread>>,
    #[serde(default)]
    pub processes: Option<Vec<Profile>>,
}

impl GeckoFile {
    /// The profile, and whether it came wrapped in a DevTools recording.
    pub fn into_profile(self) -> Option<(Profile, bool)> {
        if let Some(p) = self.profile {
            return Some((p, true));
        }
        self.threads.as_ref()?;
        Some((
            Profile {
                meta: self.meta,
                libs: self.libs,
                threads: self.threads,
                processes: self.processes,
            },
            false,
        ))
    }
}

/// One process's profile; `processes` holds the child processes' own.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Profile {
    #[serde(default)]
    pub meta: Option<Meta>,
    #[serde(default)]
    pub libs: Option<Vec<Lib>>,
    #[serde(default)]
    pub threads: Option<Vec<Thread>>,
    #[serde(default)]
    pub processes: Option<Vec<Profile>>,
}

/// `meta`: times are milliseconds. `startTime` is the epoch time every
/// sample time of this process is relative to.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Meta {
    #[serde(rename = "startTime", default)]
    pub start_time: Option<Decimal>,
    #[serde(default)]
    pub interval: Option<Decimal>,
    #[serde(default)]
    pub version: Option<Cell>,
    #[serde(default)]
    pub product: Option<String>,
    #[serde(default)]
    pub platform: Option<String>,
    #[serde(default)]
    pub oscpu: Option<String>,
    /// Present only in the Firefox Profiler's *processed* format.
    #[serde(rename = "preprocessedProfileVersion", default)]
    pub preprocessed_version: Option<IgnoredAny>,
}

/// A shared library mapped in the process: addresses in `[start, end)`.
#[derive(Debug, Deserialize)]
pub(crate) struct Lib {
    #[serde(default)]
    pub start: Option<Cell>,
    #[serde(default)]
    pub end: Option<Cell>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Thread {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(rename = "processName", default)]
    pub process_name: Option<String>,
    #[serde(default)]
    pub tid: Option<Cell>,
    #[serde(default)]
    pub pid: Option<Cell>,
    #[serde(default)]
    pub samples: Option<Table>,
    #[serde(rename = "stackTable", default)]
    pub stack_table: Option<Table>,
    #[serde(rename = "frameTable", default)]
    pub frame_table: Option<Table>,
    #[serde(rename = "stringTable", default)]
    pub string_table: Option<Vec<MaybeStr>>,
}

/// A Gecko `{schema: {column: position}, data: [[cell, …], …]}` table.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Table {
    #[serde(default)]
    pub schema: Option<HashMap<String, Cell>>,
    #[serde(default)]
    pub data: Option<Vec<Row>>,
}

impl Table {
    /// The position of `column`, when the schema names it.
    pub fn column(&self, column: &str) -> Option<usize> {
        match self.schema.as_ref()?.get(column)? {
            Cell::Int(i) => usize::try_from(*i).ok(),
            _ => None,
        }
    }

    pub fn rows(&self) -> &[Row] {
        self.data.as_deref().unwrap_or(&[])
    }
}

/// One table row.
#[derive(Debug, Default, Deserialize)]
#[serde(transparent)]
pub(crate) struct Row(pub Vec<Cell>);

impl Row {
    /// The cell at `column` (a short row reads as null there).
    pub fn get(&self, column: Option<usize>) -> Cell {
        column
            .and_then(|c| self.0.get(c))
            .copied()
            .unwrap_or(Cell::Null)
    }
}

/// One JSON value of a table row, kept only as far as flameox reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Float(f64),
    /// A string, boolean, object or array (or an integer beyond `i64`).
    Other,
}

impl Cell {
    /// A non-negative integer (an index into another table).
    pub fn index(self) -> Option<usize> {
        match self {
            Cell::Int(i) => usize::try_from(i).ok(),
            Cell::Float(f) if f >= 0.0 && f.fract() == 0.0 && f < 9.0e15 => Some(f as usize),
            _ => None,
        }
    }

    /// Any number, as `f64`.
    pub fn number(self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(i as f64),
            Cell::Float(f) if f.is_finite() => Some(f),
            _ => None,
        }
    }

    /// An integer (an integral float counts).
    pub fn int(self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(i),
            Cell::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cell;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Cell, E> {
                Ok(Cell::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Cell, E> {
                Ok(i64::try_from(v).map_or(Cell::Other, Cell::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Cell, E> {
                Ok(Cell::Float(v))
            }
            fn visit_unit<E>(self) -> Result<Cell, E> {
                Ok(Cell::Null)
            }
            fn visit_none<E>(self) -> Result<Cell, E> {
                Ok(Cell::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Cell, E> {
                Ok(Cell::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Cell, E> {
                Ok(Cell::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Cell, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Cell::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cell, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Cell::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A `stringTable` entry: a string, or `None` for anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MaybeStr(pub Option<String>);

impl<'de> Deserialize<'de> for MaybeStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<MaybeStr, E> {
                Ok(MaybeStr(Some(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<MaybeStr, E> {
                Ok(MaybeStr(Some(v)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E>(self) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_none<E>(self) -> Result<MaybeStr, E> {
                Ok(MaybeStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeStr, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeStr, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_keep_numbers_and_skip_the_rest() {
        let t: Table = serde_json::from_str(
            r#"{"data": [[1, 2.5, null, "x", true, {"a": [1]}, [2], 18446744073709551615]],
                "schema": {"stack": 0, "time": 1, "odd": "x"}}"#,
        )
        .unwrap();
        assert_eq!(t.column("stack"), Some(0));
        assert_eq!(t.column("time"), Some(1));
        assert_eq!(t.column("odd"), None);
        assert_eq!(t.column("missing"), None);
        let row = &t.rows()[0];
        assert_eq!(
            row.0,
            vec![
                Cell::Int(1),
                Cell::Float(2.5),
                Cell::Null,
                Cell::Other,
                Cell::Other,
                Cell::Other,
                Cell::Other,
                Cell::Other
            ]
        );
        assert_eq!(row.get(Some(99)), Cell::Null);
        assert_eq!(row.get(None), Cell::Null);
        assert_eq!(Cell::Float(3.0).index(), Some(3));
        assert_eq!(Cell::Float(3.5).index(), None);
        assert_eq!(Cell::Int(-1).index(), None);
        let s: Vec<MaybeStr> = serde_json::from_str(r#"["a", 1, null, {"b": 2}]"#).unwrap();
        assert_eq!(s[0], MaybeStr(Some("a".into())));
        assert!(s[1..].iter().all(|m| m.0.is_none()));
    }

    #[test]
    fn wrapper_or_bare_profile() {
        let f: GeckoFile = serde_json::from_str(
            r#"{"label": "a", "profile": {"meta": {"interval": 1}, "threads": []}}"#,
        )
        .unwrap();
        let (p, wrapped) = f.into_profile().unwrap();
        assert!(wrapped);
        assert!(p.threads.unwrap().is_empty());
        let f: GeckoFile =
            serde_json::from_str(r#"{"meta": {"startTime": 5}, "threads": []}"#).unwrap();
        assert!(!f.into_profile().unwrap().1);
        let f: GeckoFile = serde_json::from_str(r#"{"meta": {}}"#).unwrap();
        assert!(f.into_profile().is_none());
    }
}
