//! One line of ftrace's text output (`/sys/kernel/tracing/trace`,
//! `trace_pipe`, a systrace capture's body) as a
//! [`KernelEvent`](crate::kernel_events::model::KernelEvent):
//!
//! ```text
//!   opt cgu.6-24503   [001] d..2.   901.596191: sched_switch: prev_comm=opt cgu.6 prev_pid=24503 ...
//!        bash-1234    (  1234) [000] ....  12.000001: tracing_mark_write: B|1234|frame
//! ```
//!
//! The task's name may hold spaces and dashes (its pid follows the last
//! dash before the CPU column); the tgid column and the flags column are
//! optional; field values may hold spaces, so a value runs until the next
//! ` name=`.

use crate::kernel_events::model::{FieldValue, KernelEvent};

/// A parsed line, with the tgid when the trace records it.
pub struct Line {
    pub event: KernelEvent,
    pub tgid: Option<i32>,
}

/// Seconds with a decimal fraction (`901.594224`) as integer ns, exactly.
pub fn seconds_to_ns(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let mut ns: i64 = 0;
    for b in fraction.bytes().chain(std::iter::repeat(b'0')).take(9) {
        ns = ns * 10 + i64::from(b - b'0');
    }
    whole.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// The `[NNN]` CPU column: its byte range in `line`.
fn cpu_column(line: &str) -> Option<(usize, usize, u32)> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(open) = line.get(from..)?.find('[').map(|i| i + from) {
        let close = line.get(open..)?.find(']').map(|i| i + open)?;
        let digits = line.get(open + 1..close)?;
        let before_is_space = open > 0 && bytes.get(open - 1) == Some(&b' ');
        if before_is_space && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Some((open, close, digits.parse().ok()?));
        }
        from = close + 1;
    }
    None
}

/// Splits `k1=v1 k2=v with spaces k3=v3` into pairs; ` ==> ` (between a
/// switch's previous and next task) is a separator.
pub fn parse_fields(text: &str) -> Vec<(String, FieldValue)> {
    let text = text.replace(" ==> ", " ");
    // Starts of ` name=` keys.
    let bytes = text.as_bytes();
    let mut starts = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let at_word = i == 0 || bytes.get(i - 1) == Some(&b' ');
        if at_word && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            if bytes.get(j) == Some(&b'=') {
                starts.push((i, j));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    let mut fields = Vec::with_capacity(starts.len());
    for (n, &(key_start, eq)) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(text.len(), |&(next, _)| next);
        let (Some(key), Some(value)) = (text.get(key_start..eq), text.get(eq + 1..end)) else {
            continue;
        };
        fields.push((key.to_owned(), FieldValue::Str(value.trim_end().to_owned())));
    }
    fields
}

/// The `seconds:` column after the CPU (only the flags column may come
/// before it) and the text after it.
fn timestamp(rest: &str) -> Option<(i64, &str)> {
    let mut offset = 0;
    for _ in 0..2 {
        let trimmed = rest.get(offset..)?.trim_start();
        let at = rest.len() - trimmed.len();
        let end = trimmed.find(' ').map_or(rest.len(), |e| e + at);
        let token = rest.get(at..end)?;
        if let Some(ns) = token.strip_suffix(':').and_then(seconds_to_ns) {
            return Some((ns, rest.get(end..)?));
        }
        offset = end;
    }
    None
}

/// Parses one event line; `None` for comments, blank lines and anything
/// not shaped like an event.
pub fn parse_line(line: &str) -> Option<Line> {
    if line.trim_start().starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let (open, close, cpu) = cpu_column(line)?;
    // Before the CPU: `comm-pid`, then an optional `(tgid)`.
    let mut task = line.get(..open)?.trim_end();
    let mut tgid = None;
    if task.ends_with(')')
        && let Some(paren) = task.rfind('(')
    {
        let inside = task.get(paren + 1..task.len() - 1)?.trim();
        tgid = inside.parse().ok();
        task = task.get(..paren)?.trim_end();
    }
    let task = task.trim_start();
    let dash = task.rfind('-')?;
    let comm = task.get(..dash)?;
    let pid: i32 = task.get(dash + 1..)?.parse().ok()?;
    // After the CPU: optional flags, `seconds:`, `event:`, fields.
    let rest = line.get(close + 1..)?;
    let (ts, after_ts) = timestamp(rest)?;
    let body = after_ts.trim_start();
    let colon = body.find(':')?;
    let name = body.get(..colon)?.trim();
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let payload = body.get(colon + 1..)?.trim_start();
    let fields = if name == "tracing_mark_write" || name == "print" {
        vec![("buf".to_owned(), FieldValue::Str(payload.to_owned()))]
    } else {
        parse_fields(payload)
    };
    Some(Line {
        event: KernelEvent {
            ts_ns: ts,
            cpu,
            pid,
            comm: (!comm.is_empty()).then(|| comm.to_owned()),
            name: name.to_owned(),
            fields,
        },
        tgid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_line_with_spaces_in_names_parses() {
        let l = parse_line("       opt cgu.6-24503   [001] d..2.   901.596191: sched_switch: prev_comm=opt cgu.6 prev_pid=24503 prev_prio=120 prev_state=R ==> next_comm=coordinator next_pid=24490 next_prio=120").unwrap();
        let e = &l.event;
        assert_eq!((e.cpu, e.pid, e.ts_ns), (1, 24503, 901_596_191_000));
        assert_eq!(e.comm.as_deref(), Some("opt cgu.6"));
        assert_eq!(e.name, "sched_switch");
        assert_eq!(
            e.field("prev_comm"),
            Some(&FieldValue::Str("opt cgu.6".into()))
        );
        assert_eq!(e.field("prev_state"), Some(&FieldValue::Str("R".into())));
        assert_eq!(
            e.field("next_pid").and_then(FieldValue::as_i64),
            Some(24490)
        );
    }

    #[test]
    fn tgid_and_missing_flags_and_markers_parse() {
        let l = parse_line(
            "  bash-1234  (  1200) [000] ....  12.000001: tracing_mark_write: B|1200|draw frame",
        )
        .unwrap();
        assert_eq!(l.tgid, Some(1200));
        assert_eq!(
            l.event.field("buf"),
            Some(&FieldValue::Str("B|1200|draw frame".into()))
        );
        let l = parse_line("mixed_workload.-24504 [000] 901.597390: sched_process_fork: comm=mixed_workload. pid=24504 child_comm=x child_pid=24505").unwrap();
        assert_eq!(l.event.pid, 24504);
        assert_eq!(l.event.comm.as_deref(), Some("mixed_workload."));
        assert_eq!(l.event.ts_ns, 901_597_390_000);
        assert!(parse_line("# tracer: nop").is_none());
        assert!(parse_line("garbage [x] 1.0: a: b").is_none());
        assert!(parse_line("a-1 [000] ... 1.5: sched_waking: comm=a pid=2").is_some());
    }

    #[test]
    fn timestamps_are_exact_nanoseconds() {
        assert_eq!(seconds_to_ns("901.594224"), Some(901_594_224_000));
        assert_eq!(seconds_to_ns("1.123456789"), Some(1_123_456_789));
        assert_eq!(seconds_to_ns("7"), Some(7_000_000_000));
        assert_eq!(seconds_to_ns("1.1234567891"), None);
        assert_eq!(seconds_to_ns("-1.0"), None);
        assert_eq!(seconds_to_ns("99999999999999999999.0"), None);
    }
}
