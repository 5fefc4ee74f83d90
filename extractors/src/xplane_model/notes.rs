//! What damage the XSpace decoder met and skipped: a short, capped list of
//! notes with the byte offset of each, so a damaged file still yields a
//! partial model that says what it is missing.

/// What went wrong while decoding, kept short: the first
/// [`Notes::MAX_KEPT`] notes in full, the rest counted.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Notes {
    pub kept: Vec<Note>,
    /// Notes beyond the ones kept.
    pub dropped: u64,
}

/// One piece of damage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Absolute offset in the input.
    pub offset: usize,
    pub message: String,
}

impl Notes {
    /// How many notes are kept in full.
    pub const MAX_KEPT: usize = 64;

    /// Records a note.
    pub fn push(&mut self, offset: usize, message: impl Into<String>) {
        if self.kept.len() < Self::MAX_KEPT {
            self.kept.push(Note {
                offset,
                message: message.into(),
            });
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    /// Whether nothing went wrong.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.dropped == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_capped() {
        let mut notes = Notes::default();
        assert!(notes.is_empty());
        for i in 0..100 {
            notes.push(i, "x");
        }
        assert_eq!(notes.kept.len(), Notes::MAX_KEPT);
        assert_eq!(notes.dropped, 36);
    }
}
