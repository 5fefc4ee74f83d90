//! Seeded generators of realistic traces in every input format flameox
//! reads, for benchmarks, tests and the README demo. Same seed and size →
//! same bytes. See `docs/performance.md`.

pub mod calltree;
pub mod chromium;
pub mod folded;
pub mod kineto;
pub mod nccl_job;
pub mod nsight;
pub mod perfetto;
pub mod pprof;
pub mod rng;
#[cfg(test)]
mod testing;
pub mod viztracer;
