//! The body of a `PERF_RECORD_SAMPLE`, whose layout is given by its event's
//! `sample_type`: every field the kernel can write is walked in the kernel's
//! order (so the ones after it are found), the ones flameox uses are kept.

use super::attrs::*;
use super::bytes::{ByteReader, Endian};

/// The fields of one sample that are kept. `None` where `sample_type` does
/// not record the field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFields<'a> {
    pub id: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    /// The call chain as recorded: instruction pointers interleaved with
    /// `PERF_CONTEXT_*` markers (values >= [`CONTEXT_MAX`]).
    pub callchain: Vec<u64>,
    /// `PERF_SAMPLE_RAW` bytes (a tracepoint's record).
    pub raw: Option<&'a [u8]>,
    /// Branch-stack entries (walked, not kept).
    pub branch_entries: Option<u64>,
}

/// Call-chain markers: the frames after one are in that context.
pub const CONTEXT_HV: u64 = -32i64 as u64;
pub const CONTEXT_KERNEL: u64 = -128i64 as u64;
pub const CONTEXT_USER: u64 = -512i64 as u64;
pub const CONTEXT_GUEST: u64 = -2048i64 as u64;
pub const CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
pub const CONTEXT_GUEST_USER: u64 = -2560i64 as u64;
/// Values at or above this are markers, not addresses.
pub const CONTEXT_MAX: u64 = -4095i64 as u64;

/// A sample body did not hold what its `sample_type` says; names the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleTooShort(pub &'static str);

/// Reads `count` u64 words, refusing counts the body cannot hold.
fn words(r: &mut ByteReader<'_>, count: u64, what: &'static str) -> Result<(), SampleTooShort> {
    let bytes = count.checked_mul(8).ok_or(SampleTooShort(what))?;
    r.skip_u64(bytes).ok_or(SampleTooShort(what))
}

fn word(r: &mut ByteReader<'_>, what: &'static str) -> Result<u64, SampleTooShort> {
    r.u64().ok_or(SampleTooShort(what))
}

fn skip_read_format(r: &mut ByteReader<'_>, read_format: u64) -> Result<(), SampleTooShort> {
    let per_value =
        1 + u64::from(read_format & FORMAT_ID != 0) + u64::from(read_format & FORMAT_LOST != 0);
    let times = u64::from(read_format & FORMAT_TOTAL_TIME_ENABLED != 0)
        + u64::from(read_format & FORMAT_TOTAL_TIME_RUNNING != 0);
    if read_format & FORMAT_GROUP != 0 {
        let nr = word(r, "read group nr")?;
        words(r, times, "read times")?;
        let total = nr
            .checked_mul(per_value)
            .ok_or(SampleTooShort("read group"))?;
        words(r, total, "read group values")
    } else {
        words(r, per_value + times, "read value")
    }
}

/// Walks a sample body laid out by `attr.sample_type`. Bits this decoder
/// does not know are assumed to come after all known fields (new kernel
/// fields are appended), so the known ones still read correctly.
pub fn parse_sample<'a>(
    body: &'a [u8],
    attr: &EventAttr,
    endian: Endian,
) -> Result<SampleFields<'a>, SampleTooShort> {
    let mut r = ByteReader::new(body, endian);
    let mut s = SampleFields::default();
    if attr.has(SAMPLE_IDENTIFIER) {
        s.id = Some(word(&mut r, "identifier")?);
    }
    if attr.has(SAMPLE_IP) {
        s.ip = Some(word(&mut r, "ip")?);
    }
    if attr.has(SAMPLE_TID) {
        s.pid = Some(r.i32().ok_or(SampleTooShort("pid"))?);
        s.tid = Some(r.i32().ok_or(SampleTooShort("tid"))?);
    }
    if attr.has(SAMPLE_TIME) {
        s.time = Some(word(&mut r, "time")?);
    }
    if attr.has(SAMPLE_ADDR) {
        s.addr = Some(word(&mut r, "addr")?);
    }
    if attr.has(SAMPLE_ID) {
        s.id = Some(word(&mut r, "id")?);
    }
    if attr.has(SAMPLE_STREAM_ID) {
        word(&mut r, "stream_id")?;
    }
    if attr.has(SAMPLE_CPU) {
        s.cpu = Some(r.u32().ok_or(SampleTooShort("cpu"))?);
        r.u32().ok_or(SampleTooShort("cpu reserved"))?;
    }
    if attr.has(SAMPLE_PERIOD) {
        s.period = Some(word(&mut r, "period")?);
    }
    if attr.has(SAMPLE_READ) {
        skip_read_format(&mut r, attr.read_format)?;
    }
    if attr.has(SAMPLE_CALLCHAIN) {
        let nr = word(&mut r, "callchain nr")?;
        if nr > (r.remaining() / 8) as u64 {
            return Err(SampleTooShort("callchain"));
        }
        s.callchain = (0..nr)
            .map(|_| word(&mut r, "callchain"))
            .collect::<Result<_, _>>()?;
    }
    if attr.has(SAMPLE_RAW) {
        let size = r.u32().ok_or(SampleTooShort("raw size"))?;
        s.raw = Some(r.bytes(size as usize).ok_or(SampleTooShort("raw data"))?);
    }
    if attr.has(SAMPLE_BRANCH_STACK) {
        let nr = word(&mut r, "branch nr")?;
        if attr.branch_sample_type & BRANCH_HW_INDEX != 0 {
            word(&mut r, "branch hw_idx")?;
        }
        words(
            &mut r,
            nr.checked_mul(3).ok_or(SampleTooShort("branch"))?,
            "branch entries",
        )?;
        if attr.branch_sample_type & BRANCH_COUNTERS != 0 {
            words(&mut r, nr, "branch counters")?;
        }
        s.branch_entries = Some(nr);
    }
    if attr.has(SAMPLE_REGS_USER) && word(&mut r, "user regs abi")? != 0 {
        let n = u64::from(attr.sample_regs_user.count_ones());
        words(&mut r, n, "user regs")?;
    }
    if attr.has(SAMPLE_STACK_USER) {
        let size = word(&mut r, "user stack size")?;
        if size != 0 {
            r.skip_u64(size).ok_or(SampleTooShort("user stack"))?;
            word(&mut r, "user stack dyn_size")?;
        }
    }
    if attr.has(SAMPLE_WEIGHT) || attr.has(SAMPLE_WEIGHT_STRUCT) {
        word(&mut r, "weight")?;
    }
    if attr.has(SAMPLE_DATA_SRC) {
        word(&mut r, "data_src")?;
    }
    if attr.has(SAMPLE_TRANSACTION) {
        word(&mut r, "transaction")?;
    }
    if attr.has(SAMPLE_REGS_INTR) && word(&mut r, "intr regs abi")? != 0 {
        let n = u64::from(attr.sample_regs_intr.count_ones());
        words(&mut r, n, "intr regs")?;
    }
    for (bit, what) in [
        (SAMPLE_PHYS_ADDR, "phys_addr"),
        (SAMPLE_CGROUP, "cgroup"),
        (SAMPLE_DATA_PAGE_SIZE, "data_page_size"),
        (SAMPLE_CODE_PAGE_SIZE, "code_page_size"),
    ] {
        if attr.has(bit) {
            word(&mut r, what)?;
        }
    }
    if attr.has(SAMPLE_AUX) {
        let size = word(&mut r, "aux size")?;
        r.skip_u64(size).ok_or(SampleTooShort("aux data"))?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn walks_every_field_in_kernel_order() {
        let attr = EventAttr {
            sample_type: SAMPLE_IDENTIFIER
                | SAMPLE_IP
                | SAMPLE_TID
                | SAMPLE_TIME
                | SAMPLE_CPU
                | SAMPLE_PERIOD
                | SAMPLE_READ
                | SAMPLE_CALLCHAIN
                | SAMPLE_RAW
                | SAMPLE_BRANCH_STACK
                | SAMPLE_REGS_USER
                | SAMPLE_STACK_USER
                | SAMPLE_WEIGHT
                | SAMPLE_AUX,
            read_format: FORMAT_GROUP | FORMAT_ID | FORMAT_TOTAL_TIME_ENABLED,
            branch_sample_type: BRANCH_HW_INDEX,
            sample_regs_user: 0b1011,
            ..EventAttr::default()
        };
        let mut b = le(&[77, 0xffff_0001, (9 << 32) | 8, 1000, 1, 500]);
        b.extend(le(&[2, 55, 10, 1, 11, 2])); // read group: nr, enabled, 2×(value,id)
        b.extend(le(&[3, CONTEXT_KERNEL, 0xffff_0001, 0x4000]));
        b.extend(6u32.to_le_bytes());
        b.extend([1, 2, 3, 4, 5, 6]);
        b.extend(le(&[1, 0, 0x10, 0x20, 0])); // branch: nr, hw_idx, 1×(from,to,flags)
        b.extend(le(&[2, 1, 2, 3])); // regs abi + 3 regs
        b.extend(le(&[8, 0xdead, 8])); // stack size, data, dyn_size
        b.extend(le(&[4, 2])); // weight, aux size
        b.extend([0xaa, 0xbb]);
        let b = &b[..];
        let s = parse_sample(b, &attr, Endian::Little).unwrap_or_default();
        assert_eq!(s.id, Some(77));
        assert_eq!(
            (s.pid, s.tid, s.time, s.cpu, s.period),
            (Some(8), Some(9), Some(1000), Some(1), Some(500))
        );
        assert_eq!(s.callchain, vec![CONTEXT_KERNEL, 0xffff_0001, 0x4000]);
        assert_eq!(s.raw, Some(&[1u8, 2, 3, 4, 5, 6][..]));
        assert_eq!(s.branch_entries, Some(1));
        for cut in 0..b.len() {
            assert!(
                parse_sample(&b[..cut], &attr, Endian::Little).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn huge_counts_are_refused_without_allocating() {
        let attr = EventAttr {
            sample_type: SAMPLE_CALLCHAIN,
            ..EventAttr::default()
        };
        let b = le(&[u64::MAX, 1]);
        assert_eq!(
            parse_sample(&b, &attr, Endian::Little),
            Err(SampleTooShort("callchain"))
        );
        let attr = EventAttr {
            sample_type: SAMPLE_READ,
            read_format: FORMAT_GROUP | FORMAT_ID,
            ..EventAttr::default()
        };
        let b = le(&[u64::MAX / 2 + 1]);
        assert!(parse_sample(&b, &attr, Endian::Little).is_err());
    }
}
