//! The indexer must accept exactly what serde_json accepts and find the same
//! values. The reference here is serde itself: an object read member by
//! member as `&RawValue` (keys unescaped, `event::object_members`), on real
//! traces and on events mutated at seeded positions.

use std::borrow::Cow;
use std::io::{BufReader, Read};
use std::path::Path;

use super::*;
use crate::chrome::event::object_members;
use crate::chrome::scanner::{Scanner, Step as ScanStep};

/// What serde finds: (event fields, duplicates, args fields, duplicates).
type Found<'a> = (Vec<Option<&'a str>>, u32, Vec<Option<&'a str>>, u32);

fn slots<'a>(
    members: &[(Cow<'a, str>, &'a str)],
    n: usize,
    slot_of: fn(&[u8]) -> Option<usize>,
) -> (Vec<Option<&'a str>>, u32) {
    let mut values = vec![None; n];
    let mut duplicates = 0;
    for (key, value) in members {
        if let Some(slot) = slot_of(key.as_bytes())
            && values[slot].replace(*value).is_some()
        {
            duplicates += 1;
        }
    }
    (values, duplicates)
}

fn serde_reading(text: &str) -> Option<Found<'_>> {
    let members = object_members(text)?;
    let (fields, duplicates) = slots(&members, EVENT_FIELDS.len(), event_field_slot);
    let args_members = fields[field::ARGS]
        .filter(|a| a.starts_with('{'))
        .and_then(object_members)
        .unwrap_or_default();
    let (args, args_duplicates) = slots(&args_members, ARGS_FIELDS, args_field_slot);
    Some((fields, duplicates, args, args_duplicates))
}

fn index_reading<'a>(indexer: &mut Indexer, text: &'a str) -> Option<Found<'a>> {
    let mut index = EventIndex::default();
    indexer.index(text.as_bytes(), &mut index).ok()?;
    let texts = |spans: &[Span]| spans.iter().map(|s| s.text(text)).collect::<Vec<_>>();
    Some((
        texts(&index.fields),
        index.duplicate_keys,
        texts(&index.args),
        index.args_duplicate_keys,
    ))
}

fn assert_same(indexer: &mut Indexer, text: &str) {
    assert_eq!(
        index_reading(indexer, text),
        serde_reading(text),
        "the indexer and serde disagree on {text:?}"
    );
}

/// The object elements of a trace's events array, as the scanner captures them.
fn events_of(path: &Path, limit: usize) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap();
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut scanner = Scanner::new(BufReader::new(reader));
    scanner.start().unwrap();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while out.len() < limit {
        buf.clear();
        match scanner.next_element(&mut buf).unwrap() {
            ScanStep::Element {
                is_object: true, ..
            } => out.push(String::from_utf8(buf.clone()).unwrap()),
            ScanStep::Element { .. } => {}
            ScanStep::End | ScanStep::Truncated => break,
        }
    }
    out
}

const CORPUS: [&str; 8] = [
    "chrome_json/chromium_headless_page_devtools.json",
    "chrome_json/node20_trace_events.json",
    "chrome_json/pyspy_workload.chrometrace.json",
    "chrome_json/jax0.10_cpu_mlp.trace.json.gz",
    "kineto/deepseek_train_h800_ep64_rank0.json",
    "kineto/hta_v100_nccl_rank1of2_216k_events.json.gz",
    "kineto/tracelens_b200_vllm_eager_rank0of8.json.gz",
    "kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz",
];

fn corpus_events(limit: usize) -> Vec<String> {
    let root = Path::new(env!("FLAMEOX_CORPUS_DIR"));
    CORPUS
        .iter()
        .flat_map(|rel| events_of(&root.join(rel), limit))
        .collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn real_events_read_as_serde_reads_them() {
    let events = corpus_events(40_000);
    assert!(events.len() > 100_000, "{} events", events.len());
    let mut indexer = Indexer::default();
    let mut with_args = 0;
    for text in &events {
        assert_same(&mut indexer, text);
        let found = index_reading(&mut indexer, text).unwrap();
        with_args += u32::from(found.2.iter().any(Option::is_some));
    }
    // The args members were found, not just skipped.
    assert!(with_args > 10_000, "{with_args} events with mapped args");
}

/// A tiny seeded generator (xorshift) so mutations are reproducible.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn mutated_events_are_accepted_or_rejected_as_serde_does() {
    let events = corpus_events(300);
    let mut rng = Seeded(0x9E37_79B9_7F4A_7C15);
    let mut indexer = Indexer::default();
    let interesting = b"\"\\{}[],: \t0-.eE+tfnu1}x";
    let (mut accepted, mut rejected) = (0, 0);
    for text in &events {
        for _ in 0..12 {
            let mut bytes = text.as_bytes().to_vec();
            let pos = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[pos] = interesting[rng.below(interesting.len())],
                1 => {
                    bytes.remove(pos);
                }
                2 => bytes.insert(pos, interesting[rng.below(interesting.len())]),
                _ => bytes.truncate(pos.max(1)),
            }
            let Ok(mutated) = String::from_utf8(bytes) else {
                continue;
            };
            if serde_reading(&mutated).is_some() {
                accepted += 1;
            } else {
                rejected += 1;
            }
            assert_same(&mut indexer, &mutated);
        }
    }
    assert!(
        accepted > 1_000 && rejected > 1_000,
        "{accepted} / {rejected}"
    );
}

#[test]
fn edge_cases_read_as_serde_reads_them() {
    let cases = [
        r#"{}"#,
        r#"{ }"#,
        r#"{"ph":"X"}"#,
        r#"{"ph":"X","ph":"i","name":"a","zz":[1]}"#,
        r#"{"\u0070h":"X"}"#,
        r#"{"p\h":"X"}"#,
        r#"{"\ud800":1}"#,
        r#"{"name":"\ud800"}"#,
        r#"{"args":{"\ud800":1,"device":3},"ph":"X"}"#,
        r#"{"args":{"External id":1,"external id":2,"External id":3}}"#,
        r#"{"args":{"device":1},"args":5}"#,
        r#"{"args":{"device":1},"args":{"stream":7}}"#,
        r#"{"args":[1,2]}"#,
        r#"{"ts":01}"#,
        r#"{"ts":-0}"#,
        r#"{"ts":1.}"#,
        r#"{"ts":1.5e}"#,
        r#"{"ts":1.5e+3}"#,
        r#"{"ts":-}"#,
        r#"{"ts":+1}"#,
        r#"{"ts":1,}"#,
        r#"{"a":[1,]}"#,
        r#"{"a":[,1]}"#,
        r#"{"a":{"b":1,}}"#,
        r#"{"a":[[[[{"b":[{}]}]]]]}"#,
        r#"{"a":[}"#,
        r#"{"a":{]}"#,
        r#"{"a":tru}"#,
        r#"{"a":nul}"#,
        r#"{"a":true false}"#,
        r#"{"a":"x\u12"}"#,
        r#"{"a":"x\u12G4"}"#,
        r#"{"a":"x\q"}"#,
        "{\"a\":\"x\u{1}\"}",
        "{\"a\"\u{c}:1}",
        " {\"a\":1} ",
        "{\"a\":1}x",
        "{\"a\":1",
        "{\"a\":",
        "{\"a\"",
        "{",
        "[1]",
    ];
    let mut indexer = Indexer::default();
    for case in cases {
        assert_same(&mut indexer, case);
    }
    let deep = format!(
        "{{\"args\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_same(&mut indexer, &deep);
}
