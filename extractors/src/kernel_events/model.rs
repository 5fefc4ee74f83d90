//! One kernel trace event as every Linux tracer records it: the
//! tracepoint's name, the CPU, the time, the task that was running and
//! the tracepoint's fields. ftrace text, trace-cmd `.dat` pages and
//! perf.data tracepoint samples are all read into this before anything is
//! made of them, so scheduling is interpreted once.

/// A tracepoint field's value: text formats give strings, binary formats
/// integers, strings (`char[]` fields, cut at the first NUL) and arrays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    Int(i64),
    Uint(u64),
    Str(String),
    Bytes(Vec<u8>),
}

impl FieldValue {
    /// The value as a signed integer, when it is one (a text field is
    /// parsed: decimal, or hex with `0x`).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FieldValue::Int(v) => Some(*v),
            FieldValue::Uint(v) => i64::try_from(*v).ok().or(Some(*v as i64)),
            FieldValue::Str(s) => {
                let s = s.trim();
                match s.strip_prefix("0x") {
                    Some(hex) => i64::from_str_radix(hex, 16).ok(),
                    None => s.parse().ok(),
                }
            }
            FieldValue::Bytes(_) => None,
        }
    }

    /// The value as text: strings as they are, integers in decimal, bytes
    /// up to the first NUL (lossy UTF-8).
    pub fn as_text(&self) -> String {
        match self {
            FieldValue::Int(v) => v.to_string(),
            FieldValue::Uint(v) => v.to_string(),
            FieldValue::Str(s) => s.clone(),
            FieldValue::Bytes(b) => {
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..end]).into_owned()
            }
        }
    }
}

/// One decoded tracepoint record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelEvent {
    /// Nanoseconds in the tracer's clock.
    pub ts_ns: i64,
    pub cpu: u32,
    /// `common_pid`: the thread that was running when it fired (a tid).
    pub pid: i32,
    /// The running task's name where the format records it (ftrace text
    /// does, binary formats do not: their comm comes from other records).
    pub comm: Option<String>,
    /// The event's name without its system: `sched_switch`, `print`, ….
    pub name: String,
    /// The tracepoint's own fields in format order (`common_*` left out).
    pub fields: Vec<(String, FieldValue)>,
}

impl KernelEvent {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}
