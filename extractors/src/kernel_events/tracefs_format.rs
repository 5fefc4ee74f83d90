//! A tracepoint's binary layout, read from its tracefs `format` file.
//!
//! Every binary kernel trace (trace-cmd `.dat` pages, perf.data tracepoint
//! samples) stores a record as the raw bytes the tracepoint wrote; the only
//! description of those bytes is the text the kernel prints in
//! `/sys/kernel/tracing/events/<system>/<event>/format`, which both formats
//! copy into the file. This module parses that text into field offsets,
//! sizes and kinds ([`parse_event_format`]); `tracefs_decode` turns a raw
//! record into named values with it.

/// How a field's bytes are laid out in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A 1-, 2-, 4- or 8-byte integer (pointers and enums included).
    Integer,
    /// `char name[N]`: text, cut at its first NUL.
    CharArray,
    /// Any other fixed-size array, or a scalar of an odd size: raw bytes.
    Bytes,
    /// `__data_loc T[] name` (or `__rel_loc`): a 32-bit word, low 16 bits
    /// the offset of the data in the record, high 16 bits its length. With
    /// `relative` (`__rel_loc`) the offset counts from the end of the word.
    DynamicLoc { relative: bool, chars: bool },
    /// `T name[]` of size 0: everything from `offset` to the record's end
    /// (ftrace's own `print`/`bprint` events).
    Trailing { chars: bool },
}

/// One `field:` line of a format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatField {
    pub name: String,
    /// The declared type without the name, array suffix kept:
    /// `pid_t`, `char[16]`, `__data_loc char[]`.
    pub type_text: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// One of the `common_*` fields every event starts with.
    pub common: bool,
    pub kind: FieldKind,
}

/// A tracepoint's format: its id (the record's `common_type`), names and
/// fields in file order, `common_*` fields included and flagged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub id: u32,
    pub system: String,
    pub name: String,
    pub fields: Vec<FormatField>,
    /// The `print fmt:` line as written (after the label), if present.
    pub print_fmt: Option<String>,
}

/// Why a format text could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("event format has no `name:` line")]
    MissingName,
    #[error("event format `{name}` has no `ID:` line")]
    MissingId { name: String },
    #[error("event format `{name}` has an ID that is not a number: {text:?}")]
    BadId { name: String, text: String },
    #[error("event format `{name}`, line {line}: {reason}")]
    BadField {
        name: String,
        line: usize,
        reason: String,
    },
}

impl EventFormat {
    /// The field called `name` (common fields included).
    pub fn field(&self, name: &str) -> Option<&FormatField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses one tracefs `format` file of `system` (`sched`, `ftrace`, …).
pub fn parse_event_format(system: &str, text: &str) -> Result<EventFormat, FormatError> {
    let mut name: Option<String> = None;
    let mut id_text: Option<String> = None;
    let mut fields = Vec::new();
    let mut print_fmt = None;
    // Byte-level dispatch: a trace-cmd file carries ~2,000 formats (2 MB).
    for (index, raw_line) in text.split('\n').enumerate() {
        let line = raw_line.trim_ascii();
        match line.as_bytes().first() {
            Some(b'f') if line.starts_with("field") => {
                let field = parse_field_line(line).map_err(|reason| FormatError::BadField {
                    name: name.clone().unwrap_or_default(),
                    line: index.saturating_add(1),
                    reason,
                })?;
                fields.push(field);
            }
            Some(b'n') => {
                if let Some(rest) = line.strip_prefix("name:") {
                    name = Some(rest.trim_ascii().to_string());
                }
            }
            Some(b'I') => {
                if let Some(rest) = line.strip_prefix("ID:") {
                    id_text = Some(rest.trim_ascii().to_string());
                }
            }
            Some(b'p') => {
                if let Some(rest) = line.strip_prefix("print fmt:") {
                    print_fmt = Some(rest.trim_ascii().to_string());
                }
            }
            _ => {}
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or(FormatError::MissingName)?;
    let id_text = id_text.ok_or_else(|| FormatError::MissingId { name: name.clone() })?;
    let id = id_text.parse::<u32>().map_err(|_| FormatError::BadId {
        name: name.clone(),
        text: id_text.clone(),
    })?;
    Ok(EventFormat {
        id,
        system: system.to_string(),
        name,
        fields,
        print_fmt,
    })
}

/// Parses `field:<decl>;\toffset:N;\tsize:N;\tsigned:N;` (also the
/// `field special:` spelling and `header_page`'s `field: u64 timestamp;`).
pub(crate) fn parse_field_line(line: &str) -> Result<FormatField, String> {
    let body = line
        .strip_prefix("field:")
        .or_else(|| line.strip_prefix("field special:"))
        .ok_or_else(|| "not a `field:` line".to_string())?;
    let mut parts = body.split(';');
    let decl = parts.next().unwrap_or_default().trim_ascii();
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in parts {
        let part = part.trim_ascii();
        if let Some(v) = part.strip_prefix("offset:") {
            offset = Some(parse_number(v, "offset")?);
        } else if let Some(v) = part.strip_prefix("size:") {
            size = Some(parse_number(v, "size")?);
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = Some(parse_number(v, "signed")? != 0);
        }
    }
    let offset = offset.ok_or("no `offset:`")?;
    let size = size.ok_or("no `size:`")?;
    offset.checked_add(size).ok_or("offset + size overflows")?;
    let (type_text, name, array) = split_declaration(decl)?;
    let signed = signed.unwrap_or_else(|| type_is_signed(type_text));
    let kind = field_kind(type_text, array, size);
    let type_text = match array {
        Some(len) => format!("{type_text}[{len}]"),
        None => type_text.to_string(),
    };
    Ok(FormatField {
        common: name.starts_with("common_"),
        name: name.to_string(),
        type_text,
        offset,
        size,
        signed,
        kind,
    })
}

fn parse_number(value: &str, what: &str) -> Result<usize, String> {
    let value = value.trim_ascii();
    value
        .parse::<usize>()
        .map_err(|_| format!("`{what}:` is not a number: {value:?}"))
}

/// `char prev_comm[16]` → (`char`, `prev_comm`, Some("16")); `__data_loc
/// char[] name` → (`__data_loc char[]`, `name`, None); `const char * s` →
/// (`const char *`, `s`, None).
fn split_declaration(decl: &str) -> Result<(&str, &str, Option<&str>), String> {
    let (base, array) = match decl.strip_suffix(']') {
        Some(open) => match open.rfind('[') {
            Some(at) => (
                open.get(..at).unwrap_or_default(),
                Some(
                    open.get(at.saturating_add(1)..)
                        .unwrap_or_default()
                        .trim_ascii(),
                ),
            ),
            None => return Err(format!("unbalanced `]` in {decl:?}")),
        },
        None => (decl, None),
    };
    let base = base.trim_ascii_end();
    let split = base
        .bytes()
        .rposition(|b| b.is_ascii_whitespace() || b == b'*')
        .ok_or_else(|| format!("no type before the name in {decl:?}"))?;
    // The split byte is ASCII, so both sides are on char boundaries.
    let name = base.get(split.saturating_add(1)..).unwrap_or_default();
    let type_text = base.get(..=split).unwrap_or(base).trim_ascii();
    if name.is_empty() || type_text.is_empty() {
        return Err(format!("no field name in {decl:?}"));
    }
    Ok((type_text, name, array))
}

fn element_is_char(type_text: &str) -> bool {
    let t = type_text;
    let t = t
        .strip_prefix("__data_loc")
        .or_else(|| t.strip_prefix("__rel_loc"))
        .unwrap_or(t);
    let t = t.trim_ascii();
    let t = t.strip_suffix("[]").unwrap_or(t).trim_ascii();
    matches!(t, "char" | "const char" | "signed char")
}

fn field_kind(type_text: &str, array: Option<&str>, size: usize) -> FieldKind {
    let chars = element_is_char(type_text);
    if type_text.starts_with("__data_loc") {
        return FieldKind::DynamicLoc {
            relative: false,
            chars,
        };
    }
    if type_text.starts_with("__rel_loc") {
        return FieldKind::DynamicLoc {
            relative: true,
            chars,
        };
    }
    match array {
        Some(len) if len.is_empty() || size == 0 => FieldKind::Trailing { chars },
        Some(_) if chars => FieldKind::CharArray,
        Some(_) => FieldKind::Bytes,
        None if matches!(size, 1 | 2 | 4 | 8) => FieldKind::Integer,
        None => FieldKind::Bytes,
    }
}

/// The sign when a (very old) kernel leaves out `signed:`.
fn type_is_signed(type_text: &str) -> bool {
    let t = type_text
        .strip_prefix("const ")
        .unwrap_or(type_text)
        .trim_ascii();
    !(t.starts_with("unsigned")
        || t.starts_with("__u")
        || t.starts_with('u')
        || t.contains('*')
        || t == "bool"
        || t == "size_t"
        || t == "gfp_t")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED_SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\
\nprint fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

    #[test]
    fn sched_switch_parses_with_common_fields_flagged() {
        let f = parse_event_format("sched", SCHED_SWITCH);
        let f = f.as_ref().ok();
        assert_eq!(
            f.map(|f| (f.id, f.name.as_str())),
            Some((316, "sched_switch"))
        );
        let f = f.map(|f| f.fields.clone()).unwrap_or_default();
        assert_eq!(f.len(), 11);
        assert_eq!(f.iter().filter(|x| x.common).count(), 4);
        let comm = &f[4];
        assert_eq!(
            (comm.name.as_str(), comm.type_text.as_str(), comm.kind),
            ("prev_comm", "char[16]", FieldKind::CharArray)
        );
        let state = &f[7];
        assert_eq!((state.offset, state.size, state.signed), (32, 8, true));
        assert_eq!(state.kind, FieldKind::Integer);
    }

    #[test]
    fn declarations_of_every_shape_split() {
        let kinds = [
            (
                "field:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;",
                "filename",
                "__data_loc char[]",
                FieldKind::DynamicLoc {
                    relative: false,
                    chars: true,
                },
            ),
            (
                "field:__rel_loc u8[] buf;\toffset:8;\tsize:4;\tsigned:0;",
                "buf",
                "__rel_loc u8[]",
                FieldKind::DynamicLoc {
                    relative: true,
                    chars: false,
                },
            ),
            (
                "field:char buf[];\toffset:16;\tsize:0;\tsigned:1;",
                "buf",
                "char[]",
                FieldKind::Trailing { chars: true },
            ),
            (
                "field:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;",
                "args",
                "unsigned long[6]",
                FieldKind::Bytes,
            ),
            (
                "field:const char * name;\toffset:8;\tsize:8;\tsigned:0;",
                "name",
                "const char *",
                FieldKind::Integer,
            ),
            (
                "field:char *ptr;\toffset:8;\tsize:8;\tsigned:0;",
                "ptr",
                "char *",
                FieldKind::Integer,
            ),
            (
                "field: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;",
                "timestamp",
                "u64",
                FieldKind::Integer,
            ),
            (
                "field special:struct foo bar;\toffset:0;\tsize:12;",
                "bar",
                "struct foo",
                FieldKind::Bytes,
            ),
        ];
        for (line, name, ty, kind) in kinds {
            let f = parse_field_line(line);
            let got = f
                .as_ref()
                .map(|f| (f.name.as_str(), f.type_text.as_str(), f.kind));
            assert_eq!(got, Ok((name, ty, kind)), "{line}");
        }
        let unsigned = parse_field_line("field:u32 x;\toffset:0;\tsize:4;");
        assert_eq!(unsigned.map(|f| f.signed), Ok(false));
    }

    #[test]
    fn bad_texts_are_typed_errors() {
        assert_eq!(
            parse_event_format("s", "ID: 3\n"),
            Err(FormatError::MissingName)
        );
        assert!(matches!(
            parse_event_format("s", "name: x\n"),
            Err(FormatError::MissingId { .. })
        ));
        assert!(matches!(
            parse_event_format("s", "name: x\nID: -1\n"),
            Err(FormatError::BadId { .. })
        ));
        let no_size = "name: x\nID: 1\n\tfield:int a;\toffset:0;\n";
        assert!(matches!(
            parse_event_format("s", no_size),
            Err(FormatError::BadField { line: 3, .. })
        ));
        let overflow = format!(
            "name: x\nID: 1\n\tfield:int a;\toffset:{};\tsize:9;\n",
            usize::MAX
        );
        assert!(parse_event_format("s", &overflow).is_err());
        for bad in [
            "field:;offset:0;size:1;",
            "field:int;offset:0;size:1;",
            "field:int a];offset:0;size:1;",
            "field:\u{3000}a;offset:0;size:1;",
        ] {
            assert!(parse_field_line(bad).is_err(), "{bad}");
        }
    }
}
