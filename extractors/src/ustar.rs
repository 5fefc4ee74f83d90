//! A deterministic ustar archive: how a folder artifact (an `nsys export
//! --type parquetdir` / `arrowdir` folder) is kept as ONE content-addressed
//! blob, and how its members are found again without unpacking it.
//!
//! The writer emits regular files only, in the order given (callers sort by
//! name), with mode 0444, uid/gid 0, empty owner names and mtime 0, so the
//! same folder content always gives the same bytes and the same artifact id.
//! Member names are relative `/`-separated paths (a criterion tree keeps
//! its `<group>/<bench>/new/` folders); a name longer than 100 bytes is
//! split into ustar's 155-byte prefix field at a `/`.
//! Members are stored uncompressed, so each is a contiguous byte range of the
//! archive: [`index`] lists `(name, offset, len)` and readers open the range
//! in place (Parquet needs random access to its footer).

use std::io::{self, Read, Write};

/// Tar block size.
pub const BLOCK: u64 = 512;
/// Longest name field of a ustar header.
pub const MAX_NAME_BYTES: usize = 100;
/// Longest prefix field of a ustar header (the folders of a long name).
pub const MAX_PREFIX_BYTES: usize = 155;
/// Largest member a 11-digit octal size field holds (8 GiB − 1).
pub const MAX_MEMBER_BYTES: u64 = 0o777_7777_7777;

/// One member of an archive: its name and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Offset of the first content byte in the archive.
    pub offset: u64,
    pub len: u64,
}

fn octal(field: &mut [u8], value: u64) {
    // width-1 octal digits, then NUL.
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
}

/// Splits a member name into ustar's `(prefix, name)` fields; `None` when
/// it is not a clean relative path (empty, `/`-rooted, empty/`.`/`..`
/// components, NUL) or does not fit.
fn split_name(name: &str) -> Option<(&str, &str)> {
    let clean = !name.contains('\0')
        && name
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if !clean {
        return None;
    }
    if name.len() <= MAX_NAME_BYTES {
        return Some(("", name));
    }
    name.match_indices('/')
        .map(|(at, _)| (&name[..at], &name[at + 1..]))
        .find(|(prefix, rest)| prefix.len() <= MAX_PREFIX_BYTES && rest.len() <= MAX_NAME_BYTES)
}

/// The 512-byte ustar header of a regular file.
pub fn header(name: &str, len: u64) -> io::Result<[u8; BLOCK as usize]> {
    let Some((prefix, short)) = split_name(name) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "member name {name:?} must be a relative path of clean components \
                 ({MAX_NAME_BYTES} bytes, or {MAX_PREFIX_BYTES} bytes of folders + {MAX_NAME_BYTES})"
            ),
        ));
    };
    if len > MAX_MEMBER_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("member {name} is larger than {MAX_MEMBER_BYTES} bytes"),
        ));
    }
    let mut h = [0u8; BLOCK as usize];
    h[..short.len()].copy_from_slice(short.as_bytes());
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    octal(&mut h[100..108], 0o444);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], len);
    octal(&mut h[136..148], 0);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(text.as_bytes());
    Ok(h)
}

/// Zero bytes that pad `len` content bytes to a whole block.
pub fn padding(len: u64) -> usize {
    ((BLOCK - len % BLOCK) % BLOCK) as usize
}

/// Writes one member: header, exactly `len` bytes from `content`, padding.
/// Fails if `content` ends early (the file shrank while being archived).
pub fn write_member(
    out: &mut impl Write,
    name: &str,
    len: u64,
    content: &mut impl Read,
) -> io::Result<()> {
    out.write_all(&header(name, len)?)?;
    let copied = io::copy(&mut content.take(len), out)?;
    if copied != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{name} changed while it was archived ({copied} of {len} bytes)"),
        ));
    }
    out.write_all(&vec![0u8; padding(len)])
}

/// The end-of-archive marker: two zero blocks.
pub fn finish(out: &mut impl Write) -> io::Result<()> {
    out.write_all(&[0u8; 2 * BLOCK as usize])
}

fn parse_octal(field: &[u8]) -> Option<u64> {
    let text: Vec<u8> = field
        .iter()
        .copied()
        .take_while(|&b| b != 0 && b != b' ')
        .skip_while(|&b| b == b' ')
        .collect();
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(std::str::from_utf8(&text).ok()?, 8).ok()
}

fn bad(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Lists the regular-file members of an archive written by this module
/// (any ustar archive of plain files reads the same), reading only headers.
pub fn index(archive: &mut (impl Read + io::Seek)) -> io::Result<Vec<Member>> {
    let mut members = Vec::new();
    let mut at = 0u64;
    loop {
        archive.seek(io::SeekFrom::Start(at))?;
        let mut h = [0u8; BLOCK as usize];
        if let Err(e) = archive.read_exact(&mut h) {
            return Err(bad(format!("archive ends inside a header at {at}: {e}")));
        }
        if h.iter().all(|&b| b == 0) {
            return Ok(members);
        }
        if &h[257..262] != b"ustar" {
            return Err(bad(format!("no ustar header at offset {at}")));
        }
        let stored = parse_octal(&h[148..156]);
        let mut blank = h;
        blank[148..156].copy_from_slice(b"        ");
        let sum: u64 = blank.iter().map(|&b| u64::from(b)).sum();
        if stored != Some(sum) {
            return Err(bad(format!("bad header checksum at offset {at}")));
        }
        let field = |range: std::ops::Range<usize>| {
            let bytes = &h[range];
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            std::str::from_utf8(&bytes[..end])
                .map(str::to_owned)
                .map_err(|_| bad(format!("member name at {at} is not UTF-8")))
        };
        let (short, prefix) = (field(0..100)?, field(345..500)?);
        let name = if prefix.is_empty() {
            short
        } else {
            format!("{prefix}/{short}")
        };
        let len =
            parse_octal(&h[124..136]).ok_or_else(|| bad(format!("bad size field for {name}")))?;
        let offset = at + BLOCK;
        match h[156] {
            b'0' | 0 => members.push(Member { name, offset, len }),
            other => {
                return Err(bad(format!(
                    "member {name} is not a regular file (type {:?})",
                    other as char
                )));
            }
        }
        at = offset + len + padding(len) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_long_names_round_trip_through_the_prefix_field() {
        let long = format!("{}/{}/new/sample.json", "g".repeat(90), "b".repeat(60));
        assert!(long.len() > MAX_NAME_BYTES);
        let mut out = Vec::new();
        for name in ["group/bench/new/benchmark.json", long.as_str()] {
            write_member(&mut out, name, 2, &mut &b"{}"[..]).unwrap();
        }
        finish(&mut out).unwrap();
        let names: Vec<String> = index(&mut io::Cursor::new(&out))
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["group/bench/new/benchmark.json", long.as_str()]);
    }

    #[test]
    fn members_round_trip_and_the_bytes_are_deterministic() {
        let build = || {
            let mut out = Vec::new();
            for (name, body) in [("A.parquet", &b"PAR1xyzPAR1"[..]), ("b", &[7u8; 1024][..])] {
                write_member(&mut out, name, body.len() as u64, &mut &body[..]).unwrap();
            }
            finish(&mut out).unwrap();
            out
        };
        let bytes = build();
        assert_eq!(bytes, build());
        assert_eq!(bytes.len(), 512 + 512 + 512 + 1024 + 1024);
        let members = index(&mut io::Cursor::new(&bytes)).unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].name, "A.parquet");
        let m = &members[0];
        assert_eq!(
            &bytes[m.offset as usize..(m.offset + m.len) as usize],
            b"PAR1xyzPAR1"
        );
        assert_eq!(members[1].offset, 512 + 512 + 512);
        assert_eq!(members[1].len, 1024);
        // A short source is refused, never padded silently.
        let mut out = Vec::new();
        assert!(write_member(&mut out, "x", 10, &mut &b"abc"[..]).is_err());
        for bad in ["", "/a", "a//b", "a/../b", "./a", "a/"] {
            assert!(header(bad, 1).is_err(), "{bad:?}");
        }
        assert!(header(&"x".repeat(101), 1).is_err());
        // A flipped byte in a header is caught by the checksum.
        let mut broken = bytes.clone();
        broken[3] ^= 1;
        assert!(index(&mut io::Cursor::new(&broken)).is_err());
    }
}
