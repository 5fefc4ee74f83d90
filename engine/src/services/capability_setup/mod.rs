//! Capability setup: the managed Python runtime flameox owns, the pinned
//! adapters it can install there (a detached operation that verifies each
//! install or rolls it back), probes of Python environments and of adapter
//! programs, and the requirement specifiers workloads declare. See
//! `docs/detached.md` ("Capability setup").

pub mod pins;
pub mod probe_cache;
pub mod python_env;
pub mod requirement;
pub mod runtime;
pub mod setup;
pub mod third_party;
