//! A task's state as `sched_switch` records it (`prev_state`): binary
//! tracers store the kernel's `TASK_REPORT` bits, text tracers print
//! letters (`S`, `D`, `R+`, `D|K`, …). Both become the bits
//! [`crate::perfetto::ftrace::state_name`] names.

use super::model::FieldValue;

/// The state bits of one letter, as `sched_switch`'s format prints them.
fn letter_bits(letter: char) -> Option<i64> {
    Some(match letter {
        'R' => 0,
        'S' => 0x01,
        'D' => 0x02,
        'T' => 0x04,
        't' => 0x08,
        'X' => 0x10,
        'Z' => 0x20,
        'P' => 0x40,
        'I' => 0x80,
        // Kernel-only flags printed after a `|` (wakekill, waking,
        // noload, new): they refine, not change, the state.
        'K' | 'W' | 'N' | 'n' => 0,
        _ => return None,
    })
}

/// The `TASK_REPORT` bits of a `prev_state` field, however recorded.
pub fn state_bits(value: &FieldValue) -> Option<i64> {
    match value {
        FieldValue::Str(s) => {
            let s = s.trim();
            if let Some(n) = FieldValue::Str(s.to_owned()).as_i64() {
                return Some(n);
            }
            // `R+` is a preempted runnable task: bits 0.
            let mut bits = 0;
            for c in s.chars().filter(|&c| c != '|' && c != '+') {
                bits |= letter_bits(c)?;
            }
            Some(bits)
        }
        other => other.as_i64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfetto::ftrace::state_name;

    fn named(s: &str) -> &'static str {
        state_name(state_bits(&FieldValue::Str(s.into())).unwrap_or(-1))
    }

    #[test]
    fn letters_name_the_states_binary_bits_do() {
        assert_eq!(named("S"), "Sleeping");
        assert_eq!(named("D"), "Uninterruptible Sleep");
        assert_eq!(named("R"), "Runnable (Preempted)");
        assert_eq!(named("R+"), "Runnable (Preempted)");
        assert_eq!(named("X"), "Exit (Dead)");
        assert_eq!(named("D|K"), "Uninterruptible Sleep");
        assert_eq!(named("I"), "Idle");
        assert_eq!(state_bits(&FieldValue::Str("?".into())), None);
        assert_eq!(state_bits(&FieldValue::Int(2)), Some(2));
        assert_eq!(state_bits(&FieldValue::Uint(0x100)), Some(0x100));
        assert_eq!(state_name(0x100), "Runnable (Preempted)");
    }
}
