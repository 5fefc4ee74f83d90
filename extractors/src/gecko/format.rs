//! Gecko profiles in the format registry: a Firefox DevTools recording
//! (`profile` beside `label`, `duration`, …, or a head cut inside its
//! leading `markers`/`ticks`), or a bare profile (`meta` + `threads`, or a
//! head cut inside `meta`, `libs` or `threads` that shows Gecko's own keys).

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{GECKO_EXTRACTOR_NAME, GECKO_EXTRACTOR_VERSION, extract_gecko_profile};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::GeckoProfile,
    aliases: &["gecko", "firefox"],
    description: "Gecko profile (Firefox profiler raw format, bare or inside a Firefox DevTools performance recording); not the processed format profiler.firefox.com saves",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: GECKO_EXTRACTOR_NAME,
            version: GECKO_EXTRACTOR_VERSION,
        },
        extract_gecko_profile,
    ),
    measurements: false,
};

/// No producer hint: the engine would force it; the extractor names the
/// producer from `meta.product`.
fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let scan = head.object()?;
    let has = |k: &str| scan.has(k);
    let wrapper_keys = ["label", "duration", "fileType", "ticks", "configuration"];
    if has("profile") && wrapper_keys.iter().any(|k| has(k)) {
        return Sniffed::certain(None, "Firefox DevTools recording with a Gecko `profile`");
    }
    if !scan.complete
        && has("label")
        && has("duration")
        && ["markers", "frames", "memory", "ticks"]
            .iter()
            .any(|k| has(k))
    {
        return Sniffed::certain(
            None,
            "Firefox DevTools recording head (`label`, `duration`, `markers`…)",
        );
    }
    if has("meta") && has("threads") {
        return Sniffed::certain(None, "Gecko profile (`meta` and `threads`)");
    }
    let gecko_keys = head.contains(b"\"stackTable\"") && head.contains(b"\"frameTable\"");
    let gecko_meta = head.contains(b"\"interval\"")
        && (head.contains(b"\"stackwalk\"") || head.contains(b"\"processType\""));
    let gecko_libs = head.contains(b"\"breakpadId\"");
    if !scan.complete
        && (has("meta") || has("libs") || has("threads"))
        && (gecko_keys || gecko_meta || (has("libs") && gecko_libs))
    {
        return Sniffed::certain(
            None,
            "Gecko profile head (`meta`/`libs`/`threads` with Gecko keys)",
        );
    }
    None
}
