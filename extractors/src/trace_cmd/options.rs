//! trace-cmd's options: the typed records (`u16 id, u32 size, data`) that
//! say where a file's pieces are and how to read its clock.
//!
//! Version 6 has one option list, ended by id 0, between the CPU count and
//! the `flyrecord` marker. Version 7 chains option sections; each ends with
//! a `DONE` option holding the offset of the next (0 for none). Options this
//! decoder does not use are kept by id so a summary can name them.

use std::io::Read;

use super::errors::TraceCmdError;
use crate::kernel_events::endian_reader::{Endian, EndianReader};

pub const OPT_DONE: u16 = 0;
pub const OPT_DATE: u16 = 1;
pub const OPT_CPUSTAT: u16 = 2;
pub const OPT_BUFFER: u16 = 3;
pub const OPT_TRACECLOCK: u16 = 4;
pub const OPT_UNAME: u16 = 5;
pub const OPT_OFFSET: u16 = 7;
pub const OPT_CPUCOUNT: u16 = 8;
pub const OPT_VERSION: u16 = 9;
pub const OPT_TRACEID: u16 = 11;
pub const OPT_TIME_SHIFT: u16 = 12;
pub const OPT_TSC2NSEC: u16 = 14;
pub const OPT_HEADER_INFO: u16 = 16;
pub const OPT_FTRACE_EVENTS: u16 = 17;
pub const OPT_EVENT_FORMATS: u16 = 18;
pub const OPT_KALLSYMS: u16 = 19;
pub const OPT_PRINTK: u16 = 20;
pub const OPT_CMDLINES: u16 = 21;
pub const OPT_BUFFER_TEXT: u16 = 22;

/// One CPU's ring-buffer data in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuData {
    pub cpu: u32,
    pub offset: u64,
    pub size: u64,
}

/// One tracing instance's data: the top buffer has the empty name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BufferInfo {
    pub name: String,
    /// v7: the buffer section; v6 (instances): the `flyrecord` block.
    pub offset: u64,
    pub clock: Option<String>,
    pub page_size: Option<u32>,
    pub cpus: Vec<CpuData>,
    /// Text from a latency tracer, not ring-buffer pages.
    pub latency: bool,
    /// v7: the per-CPU data is in compressed chunks.
    pub compressed: bool,
}

/// TSC cycles → ns: `ns = (cycles × mult) >> shift` (`offset` is the
/// guest/host adjustment trace-cmd itself leaves unapplied on report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tsc2Nsec {
    pub mult: u32,
    pub shift: u32,
    pub offset: u64,
}

/// One `per_cpu/cpuN/stats` text, as far as it has these lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuStats {
    pub entries: Option<u64>,
    pub overrun: Option<u64>,
    pub commit_overrun: Option<u64>,
    pub dropped_events: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileOptions {
    /// The buffers in the order found; the top one has the empty name.
    pub buffers: Vec<BufferInfo>,
    /// `DATE`: µs between the trace clock and the time of day, in ns.
    pub date_offset_ns: Option<i64>,
    /// Sum of the `OFFSET` options, ns.
    pub offset_ns: i64,
    pub tsc2nsec: Option<Tsc2Nsec>,
    /// The clock in use (from `TRACECLOCK`'s `[name]`).
    pub trace_clock: Option<String>,
    /// A `TRACECLOCK` option was present (v6 then appends the clock text
    /// after the CPU data).
    pub trace_clock_option: bool,
    pub uname: Option<String>,
    pub tracer_version: Option<String>,
    pub cpu_count: Option<u32>,
    /// `CPUSTAT` options, in file order (one per CPU).
    pub cpu_stats: Vec<CpuStats>,
    pub trace_id: Option<u64>,
    /// A guest trace's host-sync data is present (not applied).
    pub has_time_shift: bool,
    /// v7: (section id, file offset) of metadata sections.
    pub sections: Vec<(u16, u64)>,
    /// Options read but not used, by id.
    pub other_options: Vec<u16>,
}

/// Reads options up to the end marker. v6 (`sectioned` false) ends at id
/// 0; v7 at a `DONE` option whose offset (next options section) is
/// returned when not 0. `base` is the list's file offset, for errors.
pub fn read_options<R: Read>(
    r: &mut EndianReader<R>,
    sectioned: bool,
    base: u64,
    opts: &mut FileOptions,
) -> Result<Option<u64>, TraceCmdError> {
    let at = |r: &EndianReader<R>| base.saturating_add(r.position());
    loop {
        let id = r.u16().map_err(TraceCmdError::io("an option id", at(r)))?;
        if !sectioned && id == OPT_DONE {
            return Ok(None);
        }
        let size = r
            .u32()
            .map_err(TraceCmdError::io("an option size", at(r)))?;
        let offset = at(r);
        let data = r
            .blob(u64::from(size))
            .map_err(TraceCmdError::io("an option", offset))?;
        let endian = r.endian();
        if id == OPT_DONE {
            let next = endian.uint_at(&data, 0, 8).unwrap_or(0);
            return Ok((next != 0).then_some(next));
        }
        apply_option(id, &data, endian, sectioned, offset, opts)?;
    }
}

fn apply_option(
    id: u16,
    data: &[u8],
    endian: Endian,
    sectioned: bool,
    offset: u64,
    opts: &mut FileOptions,
) -> Result<(), TraceCmdError> {
    let text = || {
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        String::from_utf8_lossy(data.get(..end).unwrap_or_default()).into_owned()
    };
    match id {
        OPT_DATE => {
            opts.date_offset_ns = parse_c_integer(&text()).map(|us| us.saturating_mul(1000))
        }
        OPT_OFFSET => {
            let v = parse_c_integer(&text()).unwrap_or(0);
            opts.offset_ns = opts.offset_ns.saturating_add(v);
        }
        OPT_CPUSTAT => opts.cpu_stats.push(parse_cpu_stats(&text())),
        OPT_TRACECLOCK => {
            opts.trace_clock_option = true;
            if let Some(clock) = selected_clock(&text()) {
                opts.trace_clock = Some(clock);
            }
        }
        OPT_UNAME => opts.uname = Some(text()),
        OPT_VERSION => opts.tracer_version = Some(text()),
        OPT_CPUCOUNT => opts.cpu_count = endian.uint_at(data, 0, 4).map(|v| v as u32),
        OPT_TRACEID => opts.trace_id = endian.uint_at(data, 0, 8),
        OPT_TIME_SHIFT => opts.has_time_shift = true,
        OPT_TSC2NSEC => {
            if let (Some(mult), Some(shift), Some(off)) = (
                endian.uint_at(data, 0, 4),
                endian.uint_at(data, 4, 4),
                endian.uint_at(data, 8, 8),
            ) {
                opts.tsc2nsec = Some(Tsc2Nsec {
                    mult: mult as u32,
                    shift: shift as u32,
                    offset: off,
                });
            }
        }
        OPT_BUFFER | OPT_BUFFER_TEXT => {
            let buffer = parse_buffer(data, endian, sectioned, id == OPT_BUFFER_TEXT)
                .map_err(|detail| TraceCmdError::corrupt("a BUFFER option", offset, detail))?;
            opts.buffers.push(buffer);
        }
        OPT_HEADER_INFO..=OPT_CMDLINES if sectioned => {
            if let Some(at) = endian.uint_at(data, 0, 8) {
                opts.sections.push((id, at));
            }
        }
        _ => opts.other_options.push(id),
    }
    Ok(())
}

fn parse_buffer(
    data: &[u8],
    endian: Endian,
    sectioned: bool,
    latency: bool,
) -> Result<BufferInfo, String> {
    let mut r = EndianReader::new(data, endian);
    let short = |_| "it is shorter than its fields".to_string();
    let offset = r.u64().map_err(short)?;
    let name = r.cstring(data.len()).map_err(short)?;
    let mut buffer = BufferInfo {
        name,
        offset,
        latency,
        ..BufferInfo::default()
    };
    if !sectioned {
        return Ok(buffer);
    }
    buffer.clock = Some(r.cstring(data.len()).map_err(short)?);
    if latency {
        return Ok(buffer);
    }
    buffer.page_size = Some(r.u32().map_err(short)?);
    let count = r.u32().map_err(short)?;
    if u64::from(count).saturating_mul(20) > data.len() as u64 {
        return Err(format!("{count} CPUs announced in {} bytes", data.len()));
    }
    for _ in 0..count {
        let cpu = CpuData {
            cpu: r.u32().map_err(short)?,
            offset: r.u64().map_err(short)?,
            size: r.u64().map_err(short)?,
        };
        if buffer.cpus.iter().any(|c| c.cpu == cpu.cpu) {
            return Err(format!("CPU {} is listed twice", cpu.cpu));
        }
        buffer.cpus.push(cpu);
    }
    Ok(buffer)
}

/// The `[name]` in `trace_clock`'s text, or a lone name.
pub fn selected_clock(text: &str) -> Option<String> {
    for word in text.split_whitespace() {
        if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            return Some(inner.to_string());
        }
    }
    let t = text.trim();
    (!t.is_empty() && !t.contains(char::is_whitespace)).then(|| t.to_string())
}

/// `strtoll(text, NULL, 0)`: optional sign, `0x` hex, leading-0 octal, or decimal.
pub fn parse_c_integer(text: &str) -> Option<i64> {
    let t = text.trim();
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let value = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(t.get(1..)?, 8).ok()?
    } else {
        t.parse::<i64>().ok()?
    };
    Some(if negative {
        value.checked_neg()?
    } else {
        value
    })
}

fn parse_cpu_stats(text: &str) -> CpuStats {
    let mut s = CpuStats::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().parse::<u64>().ok();
        match key.trim() {
            "entries" => s.entries = value,
            "overrun" => s.overrun = value,
            "commit overrun" => s.commit_overrun = value,
            "dropped events" => s.dropped_events = value,
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(out: &mut Vec<u8>, id: u16, data: &[u8]) {
        out.extend(id.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend(data);
    }

    #[test]
    fn v7_options_fill_buffers_clock_and_sections() {
        let mut buf = Vec::new();
        buf.extend(4096u64.to_le_bytes());
        buf.extend(b"\0local\0");
        buf.extend(4096u32.to_le_bytes());
        buf.extend(1u32.to_le_bytes());
        buf.extend(0u32.to_le_bytes());
        buf.extend(8192u64.to_le_bytes());
        buf.extend(100u64.to_le_bytes());
        let mut list = Vec::new();
        option(&mut list, OPT_BUFFER, &buf);
        option(&mut list, OPT_TRACECLOCK, b"[local] global counter\n\0");
        option(&mut list, OPT_OFFSET, b"-0x10\0");
        option(&mut list, OPT_DATE, b"0x2\0");
        option(
            &mut list,
            OPT_CPUSTAT,
            b"entries: 5\noverrun: 2\ncommit overrun: 0\ndropped events: 1\n\0",
        );
        option(&mut list, OPT_EVENT_FORMATS, &77u64.to_le_bytes());
        option(
            &mut list,
            OPT_TSC2NSEC,
            &[1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        option(&mut list, 99, b"?");
        option(&mut list, OPT_DONE, &1234u64.to_le_bytes());
        let mut opts = FileOptions::default();
        let mut r = EndianReader::new(&list[..], Endian::Little);
        assert_eq!(
            read_options(&mut r, true, 0, &mut opts).ok(),
            Some(Some(1234))
        );
        let b = &opts.buffers[0];
        assert_eq!(
            (b.name.as_str(), b.clock.as_deref(), b.page_size),
            ("", Some("local"), Some(4096))
        );
        assert_eq!(
            b.cpus,
            [CpuData {
                cpu: 0,
                offset: 8192,
                size: 100
            }]
        );
        assert_eq!(opts.trace_clock.as_deref(), Some("local"));
        assert_eq!((opts.offset_ns, opts.date_offset_ns), (-16, Some(2000)));
        assert_eq!(opts.cpu_stats[0].overrun, Some(2));
        assert_eq!(opts.sections, [(OPT_EVENT_FORMATS, 77)]);
        assert_eq!(opts.tsc2nsec.map(|t| (t.mult, t.shift)), Some((1, 2)));
        assert_eq!(opts.other_options, [99]);

        // Every truncation is an error, never a panic.
        for len in 0..list.len() {
            let mut r = EndianReader::new(&list[..len], Endian::Little);
            assert!(
                read_options(&mut r, true, 0, &mut FileOptions::default()).is_err(),
                "{len}"
            );
        }
        let mut lying = buf.clone();
        lying[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_buffer(&lying, Endian::Little, true, false).is_err());
    }

    #[test]
    fn c_integers_and_clock_names() {
        assert_eq!(parse_c_integer("0x1f"), Some(31));
        assert_eq!(parse_c_integer("-010"), Some(-8));
        assert_eq!(parse_c_integer(" 42\n"), Some(42));
        assert_eq!(parse_c_integer("0"), Some(0));
        assert_eq!(parse_c_integer("-9223372036854775808"), None);
        assert_eq!(parse_c_integer("zz"), None);
        assert_eq!(selected_clock("local global [mono]"), Some("mono".into()));
        assert_eq!(selected_clock("x86-tsc\n"), Some("x86-tsc".into()));
        assert_eq!(selected_clock("local global"), None);
    }
}
