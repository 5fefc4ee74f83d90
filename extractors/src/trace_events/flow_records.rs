//! Flow endpoints in their fixed-size byte form, for the spill file that
//! holds them while events go through sorted runs ([`super::external`]).

use std::fs::File;
use std::io::{self, BufReader, Read};

use super::store::FlowPoint;
use super::tracks::Ident;

/// Bytes of one spilled flow endpoint.
pub const FLOW_BYTES: usize = 4 + 8 + 1 + 9 + 9 + 8 + 1;

fn encode_ident(id: Ident) -> [u8; 9] {
    let (tag, value) = match id {
        Ident::None => (0u8, 0i64),
        Ident::Int(v) => (1, v),
        Ident::Label(l) => (2, i64::from(l)),
    };
    let mut out = [0u8; 9];
    out[0] = tag;
    out[1..].copy_from_slice(&value.to_le_bytes());
    out
}

fn decode_ident(bytes: &[u8]) -> Option<Ident> {
    let value = i64::from_le_bytes(bytes.get(1..9)?.try_into().ok()?);
    match bytes.first()? {
        0 => Some(Ident::None),
        1 => Some(Ident::Int(value)),
        2 => Some(Ident::Label(u32::try_from(value).ok()?)),
        _ => None,
    }
}

pub fn encode_flow(f: &FlowPoint, out: &mut [u8; FLOW_BYTES]) {
    out[0..4].copy_from_slice(&f.key.to_le_bytes());
    out[4..12].copy_from_slice(&f.numeric_id.to_le_bytes());
    out[12] = f.phase;
    out[13..22].copy_from_slice(&encode_ident(f.pid));
    out[22..31].copy_from_slice(&encode_ident(f.tid));
    out[31..39].copy_from_slice(&f.ts.to_le_bytes());
    out[39] = u8::from(f.enclosing);
}

fn decode_flow(b: &[u8]) -> Option<FlowPoint> {
    Some(FlowPoint {
        key: u32::from_le_bytes(b.get(0..4)?.try_into().ok()?),
        numeric_id: i64::from_le_bytes(b.get(4..12)?.try_into().ok()?),
        phase: *b.get(12)?,
        pid: decode_ident(b.get(13..22)?)?,
        tid: decode_ident(b.get(22..31)?)?,
        ts: i64::from_le_bytes(b.get(31..39)?.try_into().ok()?),
        enclosing: *b.get(39)? != 0,
    })
}

/// Calls `each` with every spilled flow endpoint, in input order.
pub fn for_each_flow(file: &File, count: u64, mut each: impl FnMut(FlowPoint)) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, file);
    std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(0))?;
    let mut buf = [0u8; FLOW_BYTES];
    for _ in 0..count {
        reader.read_exact(&mut buf)?;
        each(decode_flow(&buf).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a spilled flow endpoint is damaged",
            )
        })?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_events::ids::NONE;

    #[test]
    fn flow_endpoints_survive_their_byte_form() {
        for (pid, tid) in [
            (Ident::None, Ident::Int(-7)),
            (Ident::Label(u32::MAX), Ident::Int(i64::MIN)),
        ] {
            let f = FlowPoint {
                key: 9,
                numeric_id: NONE,
                phase: b't',
                pid,
                tid,
                ts: -3,
                enclosing: true,
            };
            let mut bytes = [0u8; FLOW_BYTES];
            encode_flow(&f, &mut bytes);
            let back = decode_flow(&bytes).expect("decodes");
            assert_eq!(
                (
                    back.key,
                    back.numeric_id,
                    back.phase,
                    back.pid,
                    back.tid,
                    back.ts,
                    back.enclosing
                ),
                (
                    f.key,
                    f.numeric_id,
                    f.phase,
                    f.pid,
                    f.tid,
                    f.ts,
                    f.enclosing
                )
            );
        }
        let mut bytes = [0u8; FLOW_BYTES];
        bytes[13] = 3;
        assert!(decode_flow(&bytes).is_none());
    }
}
