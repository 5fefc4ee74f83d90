//! Build script: where the shared corpus is (tests/build_support/corpus_location.rs).
include!("build_support/corpus_location.rs");

fn main() {
    emit_corpus_location(true);
}
