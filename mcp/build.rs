//! Build script: where the shared corpus is for the tests
//! (tests/build_support/corpus_location.rs).
include!("../tests/build_support/corpus_location.rs");

fn main() {
    emit_corpus_location(false);
}
