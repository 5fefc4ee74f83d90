//! The live mmap'd address ranges of a traced process, as memray's
//! `IntervalTree` keeps them for its high-water-mark and leak reports: an
//! munmap may free any part of any mapping (several, overlapping, or the
//! middle of one, which splits it). Each piece remembers the allocation it
//! came from and the record index since which it has had its current
//! extent, which is what the peak-snapshot fold in `summary.rs` needs.
//! Lookups go through a map ordered by start, so an munmap costs the
//! pieces it can touch, not every live mapping.

use std::collections::BTreeMap;

/// A live piece of a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<T> {
    pub start: u64,
    pub end: u64,
    /// What the piece is attributed to (the mmap's site).
    pub owner: T,
    /// Record index from which this piece has had exactly this extent.
    pub since: u64,
}

impl<T> Piece<T> {
    pub fn span_bytes(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// Live mapped pieces, keyed by (start, insertion number).
#[derive(Debug)]
pub struct MappedRanges<T> {
    pieces: BTreeMap<(u64, u64), Piece<T>>,
    inserted: u64,
    /// The longest piece ever held: bounds how far before an unmapped
    /// range a touching piece can start.
    longest: u64,
}

impl<T: Copy> Default for MappedRanges<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> MappedRanges<T> {
    pub fn new() -> Self {
        MappedRanges {
            pieces: BTreeMap::new(),
            inserted: 0,
            longest: 0,
        }
    }

    fn insert(&mut self, piece: Piece<T>) {
        self.longest = self.longest.max(piece.span_bytes());
        self.inserted = self.inserted.wrapping_add(1);
        self.pieces.insert((piece.start, self.inserted), piece);
    }

    /// Maps `[start, start + len)` (nothing for an empty range).
    pub fn map(&mut self, start: u64, len: u64, owner: T, since: u64) {
        if len == 0 {
            return;
        }
        let end = start.saturating_add(len);
        self.insert(Piece {
            start,
            end,
            owner,
            since,
        });
    }

    /// Unmaps `[start, start + len)` at record `now`: returns the bytes
    /// freed and each affected piece as it was; the parts of those pieces
    /// outside the range stay, as new pieces since `now`.
    pub fn unmap(&mut self, start: u64, len: u64, now: u64) -> (u64, Vec<Piece<T>>) {
        if len == 0 {
            return (0, Vec::new());
        }
        let end = start.saturating_add(len);
        let lowest = start.saturating_sub(self.longest);
        let touched: Vec<(u64, u64)> = self
            .pieces
            .range((lowest, 0)..(end, 0))
            .filter(|(_, p)| p.end > start && p.start < end)
            .map(|(k, _)| *k)
            .collect();
        let mut freed = 0u64;
        let mut affected = Vec::with_capacity(touched.len());
        for key in touched {
            let Some(piece) = self.pieces.remove(&key) else {
                continue;
            };
            let cut_start = piece.start.max(start);
            let cut_end = piece.end.min(end);
            freed = freed.saturating_add(cut_end.saturating_sub(cut_start));
            if piece.start < cut_start {
                self.insert(Piece {
                    end: cut_start,
                    since: now,
                    ..piece
                });
            }
            if cut_end < piece.end {
                self.insert(Piece {
                    start: cut_end,
                    since: now,
                    ..piece
                });
            }
            affected.push(piece);
        }
        (freed, affected)
    }

    /// Live pieces, in start order.
    pub fn pieces(&self) -> impl Iterator<Item = &Piece<T>> {
        self.pieces.values()
    }

    #[cfg(test)]
    pub fn total_len(&self) -> u64 {
        self.pieces
            .values()
            .fold(0u64, |t, p| t.saturating_add(p.span_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapping_frees_shrinks_and_splits_like_memray() {
        let mut r = MappedRanges::new();
        r.map(0x1000, 0x4000, 'a', 1);
        r.map(0x9000, 0x1000, 'b', 2);
        r.map(0x1000, 0x1000, 'c', 3); // overlaps 'a'
        assert_eq!(r.total_len(), 0x6000);
        // Middle of 'a' and all of 'c''s range's second half: none.
        let (freed, affected) = r.unmap(0x2000, 0x1000, 10);
        assert_eq!(freed, 0x1000);
        assert_eq!(affected.len(), 1);
        assert_eq!(affected[0].owner, 'a');
        let left: Vec<_> = r
            .pieces()
            .map(|p| (p.start, p.end, p.owner, p.since))
            .collect();
        assert_eq!(
            left,
            vec![
                (0x1000, 0x2000, 'c', 3),
                (0x1000, 0x2000, 'a', 10),
                (0x3000, 0x5000, 'a', 10),
                (0x9000, 0xa000, 'b', 2),
            ]
        );
        // Covering both overlapping pieces frees both intersections.
        let (freed, affected) = r.unmap(0x0, 0x2800, 11);
        assert_eq!(freed, 0x2000);
        assert_eq!(affected.len(), 2);
        assert_eq!(r.unmap(0x20000, 0x10, 12).0, 0);
        assert_eq!(r.unmap(0x9000, 0, 12).0, 0);
        r.map(u64::MAX - 1, 10, 'z', 13); // saturates, no overflow
        assert_eq!(r.unmap(u64::MAX - 1, 10, 14).0, 1);
    }
}
