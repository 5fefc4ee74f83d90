//! Garbage collection that never loses evidence: what is retained and why
//! ([`roots`]), what may be collected ([`collect`]), and the recoverable
//! trash collection moves into ([`trash`]). Dry-run by default; the CLI
//! alone applies it (MCP never collects).

pub mod collect;
pub mod roots;
pub mod trash;
