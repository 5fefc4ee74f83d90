//! Seeded generators of realistic traces, for benchmarks, tests and the
//! README demo. Same seed and size → same bytes. See `docs/performance.md`.

pub mod kineto;
pub mod perfetto;
pub mod rng;
