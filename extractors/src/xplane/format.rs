//! XPlane in the format registry. XSpace and a Perfetto trace both start
//! with field-1 LEN records, so the Perfetto sniffer alone took an XSpace
//! for a trace and imported it as zero events — a silent wrong answer. The
//! field walk decides: an XSpace's first record is an `XPlane`, whose
//! first fields are its id (field 1, varint; absent when 0) and its name
//! (field 2, a string such as `/host:CPU`, `/device:GPU:0`,
//! `/host:metadata`, `Task Environment`). This descriptor comes before
//! Perfetto's in the registry.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::format_kind::FormatKind;
use crate::sniff::{Head, Sniffed};
use crate::varint::get_u64;

pub static FORMAT: Format = Format {
    kind: FormatKind::XPlane,
    aliases: &["xspace", "jax_profile"],
    description: "XPlane / XSpace protobuf (jax.profiler, tf.profiler *.xplane.pb) → host slices, runtime launches, GPU kernels/copies/memsets with correlation ids, XLA ops and modules, steps as phases; not read: aggregated events, Launch Stats, counter lines",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: super::XPLANE_EXTRACTOR_NAME,
            version: super::XPLANE_EXTRACTOR_VERSION,
        },
        super::extract_xplane,
    ),
    measurements: false,
};

/// Plane names start like these.
const PLANE_PREFIXES: [&[u8]; 4] = [b"/host:", b"/device:", b"/task:", b"Task Environment"];

/// Whether the head's first record is an `XPlane`.
fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let mut bytes = head.bytes;
    // Top level: field 1, LEN (an XPlane).
    if get_u64(&mut bytes)? != (1 << 3 | 2) {
        return None;
    }
    get_u64(&mut bytes)?;
    let mut tag = get_u64(&mut bytes)?;
    if tag == (1 << 3) {
        // The plane's id.
        get_u64(&mut bytes)?;
        tag = get_u64(&mut bytes)?;
    }
    if tag != (2 << 3 | 2) {
        return None;
    }
    let len = usize::try_from(get_u64(&mut bytes)?).ok()?;
    let name = bytes.get(..len.min(bytes.len()))?;
    PLANE_PREFIXES
        .iter()
        .any(|p| name.starts_with(p))
        .then(|| {
            Sniffed::certain(
                Some("jax.profiler"),
                "XSpace protobuf whose first XPlane is named like /host: or /device:",
            )
        })
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(id: Option<u64>, name: &str) -> Vec<u8> {
        let mut inner = Vec::new();
        if let Some(id) = id {
            inner.push(0x08);
            crate::varint::put_u64(&mut inner, id);
        }
        inner.push(0x12);
        crate::varint::put_u64(&mut inner, name.len() as u64);
        inner.extend_from_slice(name.as_bytes());
        let mut out = vec![0x0a];
        crate::varint::put_u64(&mut out, inner.len() as u64);
        out.extend(inner);
        out
    }

    #[test]
    fn planes_are_told_from_trace_packets() {
        for (id, name) in [(None, "/host:metadata"), (Some(7), "/device:GPU:0")] {
            let bytes = plane(id, name);
            let head = Head::new(&bytes, None);
            assert!(sniff(&head).is_some(), "{name}");
        }
        // A Perfetto packet whose first field is a string of another shape.
        let bytes = plane(None, "chrome");
        assert!(sniff(&Head::new(&bytes, None)).is_none());
        assert!(sniff(&Head::new(b"\x0a", None)).is_none());
    }
}
