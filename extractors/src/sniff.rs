//! What every format's sniffer looks at: an input's first (decompressed)
//! bytes, read once into the shapes the sniffers share — the JSON top-level
//! keys as far as the head shows them, and a walk of top-level protobuf
//! fields. Each format's own sniffer ([`crate::formats::Format::sniff`])
//! lives with its extractor; [`crate::detect::detect`] asks them in the
//! registry's order.

/// How sure a sniffer is. Detection takes the first `Certain` answer in
/// registry order, else the first `Likely` one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    Certain,
    /// A weak sign (e.g. a head cut off before any telling key); any other
    /// format's certain answer wins.
    Likely,
}

/// A sniffer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sniffed {
    pub certainty: Certainty,
    /// Likely producer (`torch.profiler`, `py-spy`, …) when visible.
    pub producer: Option<&'static str>,
    /// One sentence naming the evidence, for messages and logs.
    pub reason: &'static str,
}

impl Sniffed {
    pub fn certain(producer: Option<&'static str>, reason: &'static str) -> Option<Sniffed> {
        Some(Sniffed {
            certainty: Certainty::Certain,
            producer,
            reason,
        })
    }

    pub fn likely(producer: Option<&'static str>, reason: &'static str) -> Option<Sniffed> {
        Some(Sniffed {
            certainty: Certainty::Likely,
            producer,
            reason,
        })
    }
}

/// The head of an input, as the sniffers see it.
pub struct Head<'a> {
    /// The first bytes, as read.
    pub bytes: &'a [u8],
    /// The same without a UTF-8 byte-order mark.
    pub body: &'a [u8],
    /// The file name, lower-cased (empty when unknown): breaks ties only.
    pub name: String,
    /// The JSON shape of `body`, when it starts like JSON.
    pub json: JsonHead,
    /// The top-level protobuf fields of `bytes`, when it reads like protobuf.
    pub protobuf: Option<ProtobufHead>,
}

/// The top-level JSON value of a head.
pub enum JsonHead {
    NotJson,
    /// `[]`.
    EmptyArray,
    /// `[{…`: the keys of the first element.
    ArrayOfObjects(KeyScan),
    /// `[` followed by anything else.
    OtherArray,
    /// `{…`: the top-level keys.
    Object(KeyScan),
}

/// The keys of one JSON object as far as the head shows them.
pub struct KeyScan {
    pub keys: Vec<String>,
    /// Whether the object's closing brace was reached inside the head.
    pub complete: bool,
}

impl KeyScan {
    pub fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }
}

/// A walk of the top-level protobuf fields in a head.
pub struct ProtobufHead {
    /// Fields read.
    pub fields: usize,
    /// Every field was field 1 with wire type LEN (Perfetto `TracePacket`s).
    pub only_packets: bool,
    /// Every field had the number and wire type pprof's `Profile` gives it.
    pub pprof_fields: bool,
}

impl<'a> Head<'a> {
    pub fn new(bytes: &'a [u8], file_name: Option<&str>) -> Head<'a> {
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        Head {
            bytes,
            body,
            name: file_name.unwrap_or("").to_ascii_lowercase(),
            json: json_head(body),
            protobuf: protobuf_head(bytes),
        }
    }

    /// Whether `needle` occurs in the head.
    pub fn contains(&self, needle: &[u8]) -> bool {
        contains(self.bytes, needle)
    }

    /// The top-level keys when the head is a JSON object.
    pub fn object(&self) -> Option<&KeyScan> {
        match &self.json {
            JsonHead::Object(scan) => Some(scan),
            _ => None,
        }
    }
}

/// The first `n` bytes, escaped for a message.
pub fn escape_head(head: &[u8], n: usize) -> String {
    head[..head.len().min(n)].escape_ascii().to_string()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn json_head(body: &[u8]) -> JsonHead {
    let Some(start) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
        return JsonHead::NotJson;
    };
    match body[start] {
        b'[' => {
            let i = skip_ws(body, start + 1);
            match body.get(i) {
                Some(b']') => JsonHead::EmptyArray,
                Some(b'{') => JsonHead::ArrayOfObjects(scan_keys(body, i + 1)),
                _ => JsonHead::OtherArray,
            }
        }
        b'{' => JsonHead::Object(scan_keys(body, start + 1)),
        _ => JsonHead::NotJson,
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads the keys of the object whose `{` is just before `i`, skipping the
/// values iteratively; stops quietly where the head is cut off.
fn scan_keys(b: &[u8], mut i: usize) -> KeyScan {
    let mut keys = Vec::new();
    let cut = |keys| KeyScan {
        keys,
        complete: false,
    };
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'}') => {
                return KeyScan {
                    keys,
                    complete: true,
                };
            }
            Some(b',') => {
                i += 1;
                continue;
            }
            Some(b'"') => {}
            _ => return cut(keys),
        }
        let Some(end) = string_end(b, i) else {
            return cut(keys);
        };
        keys.push(String::from_utf8_lossy(&b[i + 1..end - 1]).into_owned());
        i = skip_ws(b, end);
        if b.get(i) != Some(&b':') {
            return cut(keys);
        }
        i = skip_ws(b, i + 1);
        match value_end(b, i) {
            Some(e) => i = e,
            None => return cut(keys),
        }
    }
}

/// Index just past the string starting at `b[i] == '"'`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// Index just past the JSON value starting at `i` (iterative: any depth).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0u64;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let j = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace())?;
            Some(i + j)
        }
    }
}

fn read_varint(b: &[u8], mut i: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(i)?;
        i += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((value, i));
        }
    }
    None
}

/// Walks the top-level protobuf fields of a head that is not text. Perfetto
/// traces are only field 1 (LEN) packets; pprof `Profile` uses fields 1–14
/// with fixed wire types.
fn protobuf_head(head: &[u8]) -> Option<ProtobufHead> {
    let printable = head
        .iter()
        .take(512)
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .count();
    if head.len() >= 16 && printable * 10 >= head.len().min(512) * 9 {
        return None;
    }
    let mut i = 0;
    let mut fields = 0;
    let mut only_packets = true;
    let mut pprof_fields = true;
    while i < head.len() {
        let Some((tag, next)) = read_varint(head, i) else {
            break;
        };
        let (field, wire) = (tag >> 3, tag & 7);
        if field == 0 {
            return None;
        }
        let end = match wire {
            0 => match read_varint(head, next) {
                Some((_, e)) => e,
                None => head.len(),
            },
            1 => next + 8,
            2 => {
                let (len, e) = read_varint(head, next)?;
                if len > (1 << 30) {
                    return None;
                }
                e.saturating_add(len as usize)
            }
            5 => next + 4,
            _ => return None,
        };
        fields += 1;
        if !(field == 1 && wire == 2) {
            only_packets = false;
        }
        pprof_fields &= match field {
            1..=6 | 11 => wire == 2,
            7..=10 | 12 | 14 => wire == 0,
            13 => wire == 0 || wire == 2,
            _ => false,
        };
        i = end;
    }
    (fields > 0).then_some(ProtobufHead {
        fields,
        only_packets,
        pprof_fields,
    })
}
