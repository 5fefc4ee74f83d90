//! The Perfetto extractor on the real traces in the corpus.

mod common;

use common::*;
use flameox_extractors::{EvidenceTable as T, NoObserver, extract_perfetto};

#[test]
fn probe() {
    for f in std::fs::read_dir(corpus("perfetto")).unwrap() {
        let path = f.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let mut sink = MemorySink::default();
        let t = std::time::Instant::now();
        let s = extract_perfetto(bytes.as_slice(), &options(), &mut sink, &NoObserver);
        println!("== {} {:?}", path.display(), t.elapsed());
        match s {
            Ok(s) => {
                println!("{}", serde_json::to_string_pretty(&s).unwrap());
                let kinds = sink.strs(T::TraceEvents, "kind");
                let mut c = std::collections::BTreeMap::new();
                for k in kinds {
                    *c.entry(k).or_insert(0) += 1;
                }
                println!("kinds {c:?}");
            }
            Err(e) => println!("ERR {e}"),
        }
    }
}
