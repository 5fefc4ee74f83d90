//! What a page of fresh memory costs on this machine: writes one byte per
//! 4 KiB page of a new 256 MiB allocation (each write faults a page in),
//! then writes the whole block again now that it is resident.
//!
//! Small imports spend a third of their CPU samples in page faults
//! (docs/performance.md, "The HTA rows on small real traces"); this shows
//! the per-page price that explains it. `cargo run --release -p
//! flameox-benches --bin first-touch`.

use std::hint::black_box;
use std::time::Instant;

const BYTES: usize = 256 << 20;
const PAGE: usize = 4096;

fn main() {
    for round in 1..=3 {
        // Above glibc's mmap threshold: a fresh mapping every round.
        let mut block: Vec<u8> = Vec::with_capacity(BYTES);
        let spare = block.spare_capacity_mut();
        let start = Instant::now();
        for page in spare.chunks_mut(PAGE) {
            page[0].write(1);
        }
        let first = start.elapsed();
        let start = Instant::now();
        for page in spare.iter_mut() {
            page.write(2);
        }
        let resident = start.elapsed();
        black_box(&mut block);
        let pages = BYTES / PAGE;
        println!(
            "round {round}: first touch {:.1} ms ({:.2} µs per 4 KiB page), \
             writing all {} MiB again {:.1} ms",
            first.as_secs_f64() * 1e3,
            first.as_secs_f64() * 1e6 / pages as f64,
            BYTES >> 20,
            resident.as_secs_f64() * 1e3,
        );
    }
}
