//! Line numbers of Python frames. Since memray 1.19 a frame is recorded as
//! (code object, instruction offset) and the line is found at report time
//! from the code object's CPython line table, whose format depends on the
//! traced interpreter: the 3.11+ location table, the 3.10 `co_linetable`
//! pairs, or the ≤3.9 `co_lnotab` pairs. This follows memray's
//! `compat::parseLinetable` so lines match memray's reports, bounds-checked
//! (a damaged table gives "no line", never a read past its end).

/// The line memray reports for `instruction_offset` in a code object whose
/// first line is `first_line`: `first_line` for an empty table, 0 when the
/// offset is negative or the (3.11+) table does not cover it.
pub fn line_for_offset(
    python_version: u32,
    table: &[u8],
    instruction_offset: i32,
    first_line: i32,
) -> i32 {
    if table.is_empty() {
        return first_line;
    }
    let Ok(offset) = u64::try_from(instruction_offset) else {
        return 0;
    };
    let line = if python_version >= 0x030b_0000 {
        location_table_311(table, offset, first_line)
    } else if python_version >= 0x030a_0000 {
        Some(linetable_310(table, offset, first_line))
    } else {
        Some(lnotab_39(table, offset, first_line))
    };
    line.unwrap_or(0)
}

/// Reads bytes of a 3.11 location table with an end, like memray's
/// NUL-terminated walk.
struct Cursor<'a> {
    table: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = self.table.get(self.at).copied();
        self.at = self.at.saturating_add(1);
        b
    }

    /// 6-bit-chunk varint, bit 6 = more.
    fn varint(&mut self) -> Option<u64> {
        let mut read = self.byte()?;
        let mut value = u64::from(read & 63);
        let mut shift = 0u32;
        while read & 64 != 0 {
            read = self.byte()?;
            shift = shift.saturating_add(6);
            value |= u64::from(read & 63).checked_shl(shift).unwrap_or(0);
        }
        Some(value)
    }

    fn signed_varint(&mut self) -> Option<i64> {
        let u = self.varint()?;
        let magnitude = (u >> 1) as i64;
        Some(if u & 1 != 0 { -magnitude } else { magnitude })
    }
}

/// CPython 3.11+ `co_linetable`: entries of `(first_byte, …)` each
/// covering `(first_byte & 7) + 1` code units; memray halves the offset.
fn location_table_311(table: &[u8], offset: u64, first_line: i32) -> Option<i32> {
    let target = offset / 2;
    let mut cursor = Cursor { table, at: 0 };
    let mut line = i64::from(first_line);
    let mut addr = 0u64;
    loop {
        let first = cursor.byte()?;
        if first == 0 {
            return None;
        }
        let code = (first >> 3) & 15;
        let end = addr.saturating_add(u64::from(first & 7) + 1);
        match code {
            15 => {}
            14 => {
                line = line.saturating_add(cursor.signed_varint()?);
                cursor.varint()?; // end line delta
                cursor.varint()?; // column + 1
                cursor.varint()?; // end column + 1
            }
            13 => line = line.saturating_add(cursor.signed_varint()?),
            10..=12 => {
                line = line.saturating_add(i64::from(code) - 10);
                cursor.byte()?;
                cursor.byte()?;
            }
            _ => {
                cursor.byte()?;
            }
        }
        if addr <= target && end > target {
            return Some(line as i32);
        }
        addr = end;
    }
}

/// CPython 3.10 `co_linetable`: (bytecode delta, signed line delta) pairs,
/// -128 = no line; memray doubles the instruction index.
fn linetable_310(table: &[u8], offset: u64, first_line: i32) -> i32 {
    let last = offset.saturating_mul(2);
    let mut line = i64::from(first_line);
    let mut instruction = 0u64;
    for pair in table.chunks_exact(2) {
        let &[start_delta, line_delta] = pair else {
            break;
        };
        instruction = instruction.saturating_add(u64::from(start_delta));
        let line_delta = line_delta as i8;
        if line_delta != -128 {
            line = line.saturating_add(i64::from(line_delta));
        }
        if instruction > last {
            break;
        }
    }
    line as i32
}

/// CPython ≤3.9 `co_lnotab`: (bytecode delta, signed line delta) pairs.
fn lnotab_39(table: &[u8], offset: u64, first_line: i32) -> i32 {
    let mut line = i64::from(first_line);
    let mut bytecode = 0u64;
    for pair in table.chunks(2) {
        let Some(&bc_delta) = pair.first() else {
            break;
        };
        bytecode = bytecode.saturating_add(u64::from(bc_delta));
        if bytecode > offset {
            break;
        }
        // memray reads the line delta as it advances to the next pair; an
        // odd-length table's missing last delta counts as 0.
        let line_delta = pair.get(1).map_or(0, |&b| b as i8);
        line = line.saturating_add(i64::from(line_delta));
    }
    line as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    const PY311: u32 = 0x030b_07f0;

    #[test]
    fn python_311_location_table() {
        // Entry 1: ONE_LINE0 (code 10), 2 code units, cols → line 5.
        // Entry 2: NO_COLUMNS (code 13), 1 unit, line delta +3 → 8.
        // Entry 3: SHORT (code 0), 1 unit, second byte → still 8.
        // Entry 4: LONG (code 14), 1 unit, delta -2, end/col/endcol → 6.
        let table = [
            0x80 | (10 << 3) | 1,
            4,
            9,
            0x80 | (13 << 3),
            6,
            0x80,
            0x12,
            0x80 | (14 << 3),
            5,
            0,
            1,
            1,
        ];
        assert_eq!(line_for_offset(PY311, &table, 0, 5), 5);
        assert_eq!(line_for_offset(PY311, &table, 2, 5), 5);
        assert_eq!(line_for_offset(PY311, &table, 4, 5), 8);
        assert_eq!(line_for_offset(PY311, &table, 6, 5), 8);
        assert_eq!(line_for_offset(PY311, &table, 8, 5), 6);
        // Past the table, negative offsets: 0 as in memray.
        assert_eq!(line_for_offset(PY311, &table, 10, 5), 0);
        assert_eq!(line_for_offset(PY311, &table, -1, 5), 0);
        // Empty table: the first line.
        assert_eq!(line_for_offset(PY311, &[], 3, 5), 5);
        // Cut inside an entry: no line, no panic.
        assert_eq!(line_for_offset(PY311, &table[..8], 8, 5), 0);
    }

    #[test]
    fn python_310_and_39_tables() {
        // 3.10: (6 bytes, +0), (4, +1), (2, no line), (4, +2)
        let t310 = [6u8, 0, 4, 1, 2, 0x80, 4, 2];
        assert_eq!(line_for_offset(0x030a_00f0, &t310, 0, 10), 10);
        assert_eq!(line_for_offset(0x030a_00f0, &t310, 3, 10), 11);
        assert_eq!(line_for_offset(0x030a_00f0, &t310, 100, 10), 13);
        // 3.9 lnotab: (0, +1), (6, +2), (8, +1)
        let t39 = [0u8, 1, 6, 2, 8, 1];
        assert_eq!(line_for_offset(0x0309_00f0, &t39, 0, 20), 21);
        assert_eq!(line_for_offset(0x0309_00f0, &t39, 6, 20), 23);
        assert_eq!(line_for_offset(0x0309_00f0, &t39, 13, 20), 23);
        assert_eq!(line_for_offset(0x0309_00f0, &t39, 14, 20), 24);
        assert_eq!(line_for_offset(0x0309_00f0, &t39[..5], 99, 20), 23);
    }
}
